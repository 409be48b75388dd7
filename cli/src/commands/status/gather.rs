//! The reports of filters, one at a time, for `status` and `metrics`.

use super::disagree;
use crate::run::open::{self, Names};
use crate::shared::any::{self, AnyFilter, Sharded};
use crate::shared::ctx::Ctx;
use crate::shared::fail::is_redis;
use crate::shared::report::{Report, Server, ShardLine};
use crate::show::errors::report;
use crate::show::values::{duration, rfc3339};
use rotabloom::connect::Connection;
use rotabloom::{Error, Info, Level, Warning, WarningCode};

/// The exit code of `status --check` when a filter has an error-level
/// warning.
pub const EXIT_UNHEALTHY: u8 = 4;

/// A filter that could not be read: its name, the error line already
/// printed, and whether a key had the wrong type.
pub struct Failed {
    pub name: String,
    pub error: String,
    pub wrong_type: bool,
    /// A shard of a sharded filter is missing: unhealthy, for `--check`.
    pub missing_shard: bool,
}

/// A filter as `status` and `metrics` see it: its report, or why it
/// cannot be read.
pub enum Seen {
    Report(Box<Report>),
    Failed(Failed),
}

/// Hands `each` the report of every filter in `names` in turn, or what
/// keeps it from being read (a named one that does not exist, corrupt,
/// another format: also reported on standard error); returns the worst
/// exit code among those. One filter at a time, so that what a caller
/// keeps of each (a line of output) is all it holds: 10,000 filters are
/// not 10,000 reports in memory. A filter found in the database and
/// dropped before it was read is left out without a word. Losing Redis
/// ends it.
pub fn each(
    ctx: &Ctx,
    conn: &mut Connection,
    names: &Names,
    server: &Server,
    mut each: impl FnMut(Seen) -> anyhow::Result<()>,
) -> anyhow::Result<u8> {
    let mut worst = 0;
    for name in &names.list {
        let report_of =
            open::open_sharded_unconverged(conn, name).and_then(|f| report_of(conn, &f, server));
        match report_of {
            Ok(r) => each(Seen::Report(Box::new(r)))?,
            Err(e) if names.vanished(&e) => {}
            Err(e) if is_redis(&e) => return Err(e),
            Err(e) => {
                let (error, code) = report(&e, ctx.secrets());
                worst = worst.max(code);
                let is = |f: fn(&Error) -> bool| {
                    e.chain().any(|c| c.downcast_ref::<Error>().is_some_and(f))
                };
                each(Seen::Failed(Failed {
                    name: name.clone(),
                    error,
                    wrong_type: is(|e| matches!(e, Error::WrongType { .. })),
                    missing_shard: is(|e| matches!(e, Error::ShardMissing { .. })),
                }))?;
            }
        }
    }
    Ok(worst)
}

/// The report of `f`: of the filter, or of the whole and each shard.
fn report_of(conn: &mut Connection, f: &Sharded, server: &Server) -> anyhow::Result<Report> {
    let infos = f.info(conn)?;
    let masters = match f.is_sharded() {
        true => f.masters(conn)?,
        false => vec![None],
    };
    let mut lines: Vec<ShardLine> = Vec::with_capacity(infos.len());
    for (j, (info, master)) in infos.into_iter().zip(masters).enumerate() {
        let Some(shard) = f.shard(j as u32) else {
            break;
        };
        lines.push(ShardLine {
            shard: j as u32,
            master,
            report: filter_report(shard, info, server),
        });
    }
    if !f.is_sharded() {
        if let Some(one) = lines.pop() {
            return Ok(one.report);
        }
    }
    let mut report = Report::sharded(f.name(), lines)?;
    report.warnings.extend(disagree::warnings(conn, f)?);
    Ok(report)
}

/// The report of one filter (or shard) `filter`, read as `info`, with
/// an overdue rotation added to its warnings.
fn filter_report(filter: &AnyFilter, info: Info, server: &Server) -> Report {
    let next_rotation_at = any::next_rotation_at(filter);
    let mut warnings = info.warnings.clone();
    if let Some(due) = next_rotation_at {
        if due + chrono::Duration::minutes(5) < server.now {
            // A lazy filter rotates on its next operation.
            let lazy = info.fields.get("lazy").is_some_and(|v| v == "1");
            warnings.push(Warning::new(
                WarningCode::RotationOverdue,
                if lazy { Level::Warn } else { Level::Error },
                format!(
                    "rotation overdue since {} ({} ago): run `rotabloom rotate --if-due` from cron, or set lazy = true",
                    rfc3339(due),
                    duration(server.now - due)
                ),
            ));
        }
    }
    Report {
        info,
        rotates: filter.circular().is_some(),
        next_rotation_at,
        warnings,
        shards: Vec::new(),
    }
}
