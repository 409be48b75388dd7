//! `rotabloom dump` and `rotabloom restore`: a filter to a file and back
//! (the file format is in docs/FORMAT.md §10).

use crate::connect::Ctx;
use crate::errors::{file_error, usage};
use crate::show::{bytes, count};
use crate::Output;
use rotabloom::dump::{self, Summary};
use serde_json::json;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
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

/// `rotabloom dump NAME FILE`: written to a temporary file beside FILE and
/// renamed over it once complete, so that FILE is never half a dump.
pub fn dump(ctx: &Ctx, name: &str, path: &Path, output: Output) -> anyhow::Result<u8> {
    if is_std(path) && io::stdout().is_terminal() {
        return Err(usage(
            "dump: a dump is binary: give a FILE, or redirect standard output",
        ));
    }
    let mut conn = ctx.connect()?;
    crate::connect::open(&mut conn, name)?;
    let summary = if is_std(path) {
        let mut out = BufWriter::new(io::stdout().lock());
        dump::dump(&mut conn, name, &mut out)?
    } else {
        // A rotation, expansion or clear during the dump makes it
        // inconsistent: a file can be written again, a few times.
        let mut attempt = 1;
        loop {
            match dump_to_file(&mut conn, name, path) {
                Err(e) if attempt < DUMP_ATTEMPTS && is_contention(&e) => attempt += 1,
                other => break other?,
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

fn is_contention(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rotabloom::Error>(),
            Some(rotabloom::Error::Contention { .. })
        )
    })
}

/// One dump into a temporary file beside `path`, renamed over it once
/// complete and on disk; removed on failure.
fn dump_to_file(
    conn: &mut rotabloom::connect::Connection,
    name: &str,
    path: &Path,
) -> anyhow::Result<Summary> {
    let tmp = crate::metrics::temp_beside(path);
    let file = File::create(&tmp)
        .map_err(|e| file_error(format!("cannot write {}: {e}", tmp.display())))?;
    let mut out = BufWriter::new(file);
    let done = dump::dump(conn, name, &mut out).and_then(|s| {
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .map_err(|source| rotabloom::Error::Io {
                what: format!("writing {}", tmp.display()),
                source,
            })?;
        Ok(s)
    });
    let renamed = done.map_err(anyhow::Error::from).and_then(|s| {
        std::fs::rename(&tmp, path)
            .map_err(|e| file_error(format!("cannot write {}: {e}", path.display())))?;
        Ok(s)
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// `rotabloom restore FILE [--as NAME]`.
pub fn restore(
    ctx: &Ctx,
    path: &Path,
    as_name: Option<&str>,
    output: Output,
) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let summary = if is_std(path) {
        dump::restore(&mut conn, BufReader::new(io::stdin().lock()), as_name)?
    } else {
        let file = File::open(path)
            .map_err(|e| file_error(format!("cannot read {}: {e}", path.display())))?;
        dump::restore(&mut conn, BufReader::new(file), as_name)?
    };
    let (text, doc) = said(&summary, "restored from", path);
    let mut out = io::stdout();
    output.print(&mut out, &text, &doc, true)?;
    out.flush()?;
    Ok(0)
}
