//! `rotabloom`: create, inspect, rotate and use rotabloom filters from the
//! shell. See `docs/CLI.md`.
//!
//! This file parses the command line and hands each command to its
//! module. The modules are layers, each using only those below it:
//!
//! - `args`: the command line as clap parses it;
//! - `commands`: one module per command;
//! - `run`: the machinery of a run over items (the reader, the batches in
//!   flight, their tally, the state file to resume from, the writers,
//!   interrupts) and finding filters;
//! - `show`: what people read (text and JSON values, `status`, windows,
//!   warnings and errors on standard error, colour, help);
//! - `shared`: what all of them take (the context, `Output`, errors'
//!   exit codes).

mod args;
mod commands;
mod run;
mod shared;
mod show;

use args::{Cli, Command};
use clap::FromArgMatches;
use commands::{
    add, check, create, drop, dump, expanding, filter, generate, list, load, metrics, rotate,
    status,
};
use rotabloom::config::Secrets;
use shared::ctx::Ctx;
use std::process::ExitCode;

fn main() -> ExitCode {
    run::alloc::keep_batch_buffers();
    // Before anything is printed: --color decides how clap prints too.
    show::term::init(std::env::args_os());
    show::errors::install_panic_hook(Secrets::default());
    show::warnings::install();
    // `COMPLETE=bash rotabloom ...` (the completion script's call) answers
    // here and exits.
    clap_complete::CompleteEnv::with_factory(args::command).complete();
    let parsed = args::command()
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return show::errors::exit_clap(&e),
    };
    // These need neither a configuration nor Redis.
    let local = match &cli.command {
        Command::Completions { shell } => Some(generate::completions(*shell)),
        Command::Man { command, dir } => Some(generate::man(
            &args::for_manual(),
            command.as_deref(),
            dir.as_deref(),
        )),
        _ => None,
    };
    if let Some(result) = local {
        return match result {
            Ok(code) => ExitCode::from(code),
            Err(e) => show::errors::exit(&e, &Secrets::default()),
        };
    }
    let ctx = match cli.globals.ctx(&matches) {
        Ok(ctx) => ctx,
        Err(e) => return show::errors::exit(&e, &Secrets::default()),
    };
    show::errors::install_panic_hook(ctx.secrets().clone());
    match dispatch(&ctx, cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) => show::errors::exit(&ctx.explain(e), ctx.secrets()),
    }
}

fn dispatch(ctx: &Ctx, command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Create(args) => create::run(
            ctx,
            &args.names,
            &args.settings,
            args.from,
            args.dry_run,
            args.output,
        ),
        Command::Status { names, json, check } => status::run(ctx, names, json, check),
        Command::Rotate {
            names,
            output,
            if_due,
            now,
            force,
        } => rotate::run(ctx, names, if_due, now, force, output),
        Command::Add {
            name,
            items,
            output,
            state,
        } => add::run(ctx, &name, items, output, &state),
        Command::Check {
            name,
            items,
            absent,
        } => check::run(ctx, &name, items, absent),
        Command::Filter { name, batch, state } => filter::run(ctx, &name, batch as usize, &state),
        Command::Load {
            name,
            file,
            output,
            batch,
            progress_every,
            state,
        } => load::run(
            ctx,
            &name,
            &file,
            batch as usize,
            progress_every,
            output,
            &state,
        ),
        Command::Drop { name, yes, output } => drop::run(ctx, &name, yes, output),
        Command::List { json } => list::run(ctx, json),
        Command::Clear { name, yes, output } => drop::clear(ctx, &name, yes, output),
        Command::Expand { name, output } => expanding::expand::run(ctx, &name, output),
        Command::Convert {
            name,
            growth,
            output,
        } => expanding::convert::run(ctx, &name, &growth, output),
        Command::Adopt(args) => expanding::adopt::run(ctx, &args),
        Command::Dump { name, file, output } => dump::dump(ctx, &name, &file, output),
        Command::Restore {
            file,
            as_name,
            output,
        } => dump::restore(ctx, &file, as_name.as_deref(), output),
        Command::Metrics { names, output } => metrics::run(ctx, names, output.as_deref()),
        Command::Completions { shell } => generate::completions(shell),
        Command::Man { command, dir } => {
            generate::man(&args::for_manual(), command.as_deref(), dir.as_deref())
        }
    }
}
