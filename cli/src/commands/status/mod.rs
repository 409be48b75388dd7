//! `rotabloom status`: filters, generations and warnings, as text or JSON,
//! written a filter at a time.

pub mod disagree;
pub mod gather;

use crate::run::open;
use crate::shared::ctx::Ctx;
use crate::shared::report::Server;
use crate::show::status::{self as view, level_word, server_json};
use gather::{each, Seen, EXIT_UNHEALTHY};
use rotabloom::{Level, Warning, WarningCode};
use serde_json::{json, Value};
use std::io::Write;

pub fn run(ctx: &Ctx, names: Vec<String>, json: bool, check: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let names = open::names_or_all(&mut conn, names)?;
    let server = Server::read(&mut conn)?;
    let warnings = server.warnings();
    let mut unhealthy = warnings.iter().any(|w| w.level == Level::Error);
    let (mut missing_shard, mut any) = (false, false);
    // Whether an element of the JSON `filters` array was written.
    let mut written = false;
    // The filters that cannot be read come after the others, as one
    // small value each.
    let mut failed: Vec<Value> = Vec::new();
    // Colour on a terminal only (and as --color says).
    let mut out = anstream::stdout().lock();
    if json {
        // One object on one line, as every command's JSON (`jq .` to
        // read), written a filter at a time; its keys in serde_json's
        // order, as one `json!` would give them.
        out.write_all(b"{\"filters\":[")?;
    }
    let worst = each(ctx, &mut conn, &names, &server, |seen| {
        match seen {
            Seen::Report(r) => {
                unhealthy |= r.warnings.iter().any(|w| w.level == Level::Error);
                if json {
                    if written {
                        out.write_all(b",")?;
                    }
                    written = true;
                    serde_json::to_writer(&mut out, &view::json(&r)?)?;
                } else {
                    out.write_all(view::text(&r, &server).as_bytes())?;
                }
            }
            Seen::Failed(f) => {
                missing_shard |= f.missing_shard;
                let warnings: Vec<Warning> = f
                    .wrong_type
                    .then(|| Warning::new(WarningCode::WrongKeyType, Level::Error, f.error.clone()))
                    .into_iter()
                    .collect();
                failed.push(json!({ "name": f.name, "error": f.error, "warnings": warnings }));
            }
        }
        any = true;
        Ok(())
    })?;
    if json {
        for f in &failed {
            if written {
                out.write_all(b",")?;
            }
            written = true;
            serde_json::to_writer(&mut out, f)?;
        }
        writeln!(
            out,
            "],\"server\":{},\"warnings\":{}}}",
            server_json(&server),
            serde_json::to_string(&warnings)?
        )?;
    } else {
        if !any {
            writeln!(out, "no filters")?;
        }
        for w in &warnings {
            writeln!(
                out,
                "{}: server: {} [{}]",
                level_word(w.level),
                w.message,
                w.code
            )?;
        }
    }
    out.flush()?;
    if check && ((worst == 0 && unhealthy) || missing_shard) {
        return Ok(EXIT_UNHEALTHY);
    }
    Ok(worst)
}
