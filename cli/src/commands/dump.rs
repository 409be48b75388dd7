//! `rotabloom dump` and `rotabloom restore`: a filter to a file and back
//! (the file format is in docs/FORMAT.md §10).

use crate::run::{interrupt, outfile};
use crate::shared::ctx::Ctx;
use crate::shared::fail::{describe, file_error, usage, Fail};
use crate::shared::output::Output;
use crate::show::values::{bytes, count};
use rotabloom::dump::{self, Summary};
use serde_json::json;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::Path;

/// `-` for standard input or output.
fn is_std(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn said(s: &Summary, verb: &str, path: &Path) -> (String, serde_json::Value) {
    let text = format!(
        "{}: {verb} {} ({}, {}, {}, {} of bits)",
        s.name,
        path.display(),
        s.kind,
        count(s.items, "item"),
        count(s.generations as u64, "generation"),
        bytes(s.bytes)
    );
    let doc = json!({
        "name": s.name,
        "result": verb.split(' ').next().unwrap_or(verb),
        "file": path.display().to_string(),
        "kind": s.kind,
        "items": s.items,
        "generations": s.generations,
        "blocks": s.blocks,
        "data_bytes": s.bytes,
    });
    (text, doc)
}

/// `rotabloom dump NAME FILE`: a regular FILE is written to a temporary
/// file beside it and renamed over it once complete, so that it is never
/// half a dump; a FIFO or a device is written straight through
/// (`crate::run::outfile`).
pub fn dump(ctx: &Ctx, name: &str, path: &Path, output: Output) -> anyhow::Result<u8> {
    if is_std(path) && io::stdout().is_terminal() {
        return Err(usage(
            "dump: a dump is binary: give a FILE, or redirect standard output",
        ));
    }
    // The file first: a path that cannot be written fails before Redis
    // is asked anything.
    let mut first = match is_std(path) {
        true => None,
        false => Some(outfile::open(path)?),
    };
    let mut conn = ctx.connect()?;
    // Sharded or not: a sharded filter is dumped whole (FORMAT.md §11.7).
    crate::run::open::open_sharded(&mut conn, name)?;
    let summary = if is_std(path) {
        let mut out = BufWriter::new(io::stdout().lock());
        dump::dump(&mut conn, name, &mut out).map_err(|e| written(e, "standard output"))?
    } else {
        // A rotation, expansion or clear during the dump makes it
        // inconsistent: a file can be written again, a few times; what
        // went through a pipe cannot.
        let mut attempt = 1;
        loop {
            let mut sink = match first.take() {
                Some(sink) => sink,
                None => outfile::open(path)?,
            };
            match dump::dump(&mut conn, name, sink.out()) {
                Ok(s) => {
                    sink.commit()?;
                    break s;
                }
                Err(rotabloom::Error::Contention { .. })
                    if !sink.is_through() && attempt < DUMP_ATTEMPTS =>
                {
                    attempt += 1
                }
                Err(e) => return Err(written(e, &sink.shown())),
            }
        }
    };
    if !is_std(path) {
        let (text, doc) = said(&summary, "dumped to", path);
        output.print(&mut io::stdout(), &text, &doc, true)?;
    }
    Ok(0)
}

/// How many times `dump FILE` tries when the filter changes under it.
const DUMP_ATTEMPTS: u32 = 3;

/// A dump's error: one that writing `shown` met is a local file error
/// (exit 5), a reader that went away included: the dump is incomplete.
fn written(e: rotabloom::Error, shown: &str) -> anyhow::Error {
    match e {
        rotabloom::Error::Io { source, .. } => outfile::write_error(shown, &source),
        e => e.into(),
    }
}

/// `rotabloom restore FILE [--as NAME]`. SIGINT, SIGTERM and SIGHUP stop
/// it before its next write, and it deletes what it wrote before it exits
/// (128 + the signal); the input is read on a thread of its own so that a
/// stalled pipe does not hold the signal back.
pub fn restore(
    ctx: &Ctx,
    path: &Path,
    as_name: Option<&str>,
    output: Output,
) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    // Opened before the signals are caught: a FIFO's open blocks until a
    // writer comes, and a signal then ends the process, nothing written.
    let input: Box<dyn Read + Send> = if is_std(path) {
        Box::new(io::stdin())
    } else {
        Box::new(
            File::open(path)
                .map_err(|e| file_error(format!("cannot read {}: {e}", path.display())))?,
        )
    };
    let (caught, input) = interrupt::cancellable(input)
        .map_err(|e| file_error(format!("cannot read {}: {e}", path.display())))?;
    let options = dump::RestoreOptions::new()
        .name(as_name)
        .cancel_on(caught.flag());
    // Unbuffered: the input thread reads in large chunks already.
    let restored = dump::restore_with(&mut conn, input, options);
    let summary = match (restored, caught.signal()) {
        (Ok(summary), _) => summary,
        (Err(e), Some(signal)) => {
            let e = anyhow::Error::from(e);
            return Err(anyhow::Error::new(Fail {
                code: interrupt::exit_code(signal),
                message: format!(
                    "{}: {}",
                    interrupt::name(signal),
                    describe(&e, ctx.secrets())
                ),
            }));
        }
        (Err(e), None) => return Err(e.into()),
    };
    let (text, doc) = said(&summary, "restored from", path);
    let mut out = io::stdout();
    output.print(&mut out, &text, &doc, true)?;
    out.flush()?;
    Ok(0)
}
