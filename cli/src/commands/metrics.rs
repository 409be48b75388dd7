//! `rotabloom metrics`: every filter's state in the Prometheus text
//! exposition format, for node_exporter's textfile collector or any
//! scraper that reads a file.

use super::status::gather::{self, Seen};
use crate::run::open;
use crate::run::outfile;
use crate::shared::ctx::Ctx;
use crate::shared::report::{Report, Server};
use rotabloom::{Level, Warning};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// One metric family: its name, help, and its samples' lines, written
/// as each is added (a family's lines must stand together, so each has
/// its own text; a filter's report is dropped once its samples are in).
struct Family {
    name: &'static str,
    help: &'static str,
    lines: String,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            lines: String::new(),
        }
    }

    fn add(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(
            self.lines,
            "{}{{{}}} {}",
            self.name,
            labels.join(","),
            number(value)
        );
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        out.push_str(&self.lines);
    }
}

/// A label value as the text format wants it: `\`, `"` and newlines
/// escaped.
fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A sample value: integers without a fraction, the rest in Rust's
/// shortest round-trip form, which Prometheus parses (`1e-7`, `0.25`).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

fn filter(name: &str) -> Vec<(&'static str, String)> {
    vec![("filter", name.to_string())]
}

fn level_label(l: Level) -> String {
    l.as_str().to_string()
}

/// One sample per level, zeros included, so that an alert on a level
/// has a series to compare.
fn count_levels(name: &str, ws: &[Warning], family: &mut Family) {
    for l in [Level::Error, Level::Warn, Level::Info] {
        let n = ws.iter().filter(|w| w.level == l).count();
        let mut labels = filter(name);
        labels.push(("level", level_label(l)));
        family.add(labels, n as f64);
    }
}

/// The exposition being written: one family per metric.
struct Exposition {
    up: Family,
    kind: Family,
    items: Family,
    capacity: Family,
    fill: Family,
    fpr: Family,
    bytes: Family,
    gens: Family,
    epoch: Family,
    next: Family,
    warnings: Family,
    warning: Family,
}

impl Exposition {
    fn new() -> Exposition {
        Exposition {
            up: Family::new(
                "rotabloom_filter_up",
                "1 when the filter could be read, 0 when reading it failed (see the command's stderr).",
            ),
            kind: Family::new(
                "rotabloom_filter_info",
                "Always 1; the labels say the filter's kind.",
            ),
            items: Family::new(
                "rotabloom_items",
                "Distinct items inserted, over all generations.",
            ),
            capacity: Family::new(
                "rotabloom_capacity",
                "Items the generations were sized for, summed.",
            ),
            fill: Family::new("rotabloom_fill_ratio", "Items divided by capacity."),
            fpr: Family::new(
                "rotabloom_false_positive_rate",
                "Estimated false-positive rate of a query now, from the bits set.",
            ),
            bytes: Family::new(
                "rotabloom_memory_bytes",
                "Bytes Redis holds for the filter's generations.",
            ),
            gens: Family::new("rotabloom_generations", "Live generations."),
            epoch: Family::new(
                "rotabloom_epoch",
                "Structural changes so far (rotations, expansions, conversions).",
            ),
            next: Family::new(
                "rotabloom_next_rotation_seconds",
                "Seconds until the next scheduled rotation (negative when overdue); scheduled circular filters only.",
            ),
            warnings: Family::new(
                "rotabloom_warnings",
                "Warnings of the filter, by level (alert on level=\"error\" > 0).",
            ),
            warning: Family::new(
                "rotabloom_warning",
                "1 for each warning of the filter, by code and level.",
            ),
        }
    }

    /// The samples of a filter that was read.
    fn report(&mut self, r: &Report, server: &Server) {
        let i = &r.info;
        let name = i.name.as_str();
        self.up.add(filter(name), 1.0);
        let mut k = filter(name);
        k.push(("kind", i.kind.as_str().to_string()));
        self.kind.add(k, 1.0);
        self.items.add(filter(name), i.count as f64);
        self.capacity.add(filter(name), r.capacity() as f64);
        self.fill
            .add(filter(name), i.count as f64 / r.capacity().max(1) as f64);
        self.fpr.add(filter(name), i.false_positive_rate);
        self.bytes.add(filter(name), i.memory_bytes as f64);
        self.gens.add(filter(name), i.generations.len() as f64);
        self.epoch.add(filter(name), i.epoch as f64);
        if let Some(t) = r.next_rotation_at {
            self.next.add(
                filter(name),
                (t - server.now).num_milliseconds() as f64 / 1000.0,
            );
        }
        count_levels(name, &r.warnings, &mut self.warnings);
        for w in &r.warnings {
            let mut labels = filter(name);
            labels.push(("code", w.code.as_str().to_string()));
            labels.push(("level", level_label(w.level)));
            self.warning.add(labels, 1.0);
        }
    }

    /// The whole text, with the server's warnings last.
    fn finish(self, server: &Server) -> String {
        let mut server_warning = Family::new(
            "rotabloom_server_warning",
            "1 for each warning about the Redis server, by code and level.",
        );
        for w in server.warnings() {
            server_warning.add(
                vec![
                    ("code", w.code.as_str().to_string()),
                    ("level", level_label(w.level)),
                ],
                1.0,
            );
        }
        let mut out = String::new();
        for f in [
            &self.up,
            &self.kind,
            &self.items,
            &self.capacity,
            &self.fill,
            &self.fpr,
            &self.bytes,
            &self.gens,
            &self.epoch,
            &self.next,
            &self.warnings,
            &self.warning,
            &server_warning,
        ] {
            f.write(&mut out);
        }
        out
    }
}

/// Writes `text` to `path` as the textfile collector needs: a regular
/// file is replaced whole (a scrape never reads half of it); a FIFO or a
/// device is written straight through (`crate::run::outfile`).
fn write_out(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut sink = outfile::open(path)?;
    let shown = sink.shown();
    sink.out()
        .write_all(text.as_bytes())
        .map_err(|e| outfile::write_error(&shown, &e))?;
    sink.commit()
}

pub fn run(ctx: &Ctx, names: Vec<String>, output: Option<&Path>) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let names = open::names_or_all(&mut conn, names)?;
    let server = Server::read(&mut conn)?;
    // A filter that cannot be read is `rotabloom_filter_up 0`, not a
    // missing file: the exposition is written either way.
    let mut exposition = Exposition::new();
    // Their `up 0` after every filter read, as one name each.
    let mut failed = Vec::new();
    let worst = gather::each(ctx, &mut conn, &names, &server, |seen| {
        match seen {
            Seen::Report(r) => exposition.report(&r, &server),
            Seen::Failed(f) => failed.push(f.name),
        }
        Ok(())
    })?;
    for name in &failed {
        exposition.up.add(filter(name), 0.0);
    }
    let text = exposition.finish(&server);
    match output {
        Some(path) => write_out(path, &text)?,
        None => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_labels_in_the_text_format() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1e-7), "1e-7");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let mut f = Family::new("x_total", "Help.");
        f.add(filter("a\"b"), 2.0);
        let mut out = String::new();
        f.write(&mut out);
        assert_eq!(
            out,
            "# HELP x_total Help.\n# TYPE x_total gauge\nx_total{filter=\"a\\\"b\"} 2\n"
        );
    }
}
