//! `rotabloom metrics`: every filter's state in the Prometheus text
//! exposition format, for node_exporter's textfile collector or any
//! scraper that reads a file.

use crate::connect::{self, Ctx};
use crate::outfile;
use crate::status::{self, Report, Server};
use rotabloom::{Level, Warning};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// One metric family: its name, help, and samples (labels, value).
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            samples: Vec::new(),
        }
    }

    fn add(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        self.samples.push((labels, value));
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.samples {
            let labels: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = writeln!(
                out,
                "{}{{{}}} {}",
                self.name,
                labels.join(","),
                number(*value)
            );
        }
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

/// The whole exposition for `reports`, the filters that could not be
/// read, and the server's warnings.
fn render(reports: &[Report], failed: &[status::Failed], server: &Server) -> String {
    let mut up = Family::new(
        "rotabloom_filter_up",
        "1 when the filter could be read, 0 when reading it failed (see the command's stderr).",
    );
    let mut kind = Family::new(
        "rotabloom_filter_info",
        "Always 1; the labels say the filter's kind.",
    );
    let mut items = Family::new(
        "rotabloom_items",
        "Distinct items inserted, over all generations.",
    );
    let mut capacity = Family::new(
        "rotabloom_capacity",
        "Items the generations were sized for, summed.",
    );
    let mut fill = Family::new("rotabloom_fill_ratio", "Items divided by capacity.");
    let mut fpr = Family::new(
        "rotabloom_false_positive_rate",
        "Estimated false-positive rate of a query now, from the bits set.",
    );
    let mut bytes = Family::new(
        "rotabloom_memory_bytes",
        "Bytes Redis holds for the filter's generations.",
    );
    let mut gens = Family::new("rotabloom_generations", "Live generations.");
    let mut epoch = Family::new(
        "rotabloom_epoch",
        "Structural changes so far (rotations, expansions, conversions).",
    );
    let mut next = Family::new(
        "rotabloom_next_rotation_seconds",
        "Seconds until the next scheduled rotation (negative when overdue); scheduled circular filters only.",
    );
    let mut warnings = Family::new(
        "rotabloom_warnings",
        "Warnings of the filter, by level (alert on level=\"error\" > 0).",
    );
    let mut warning = Family::new(
        "rotabloom_warning",
        "1 for each warning of the filter, by code and level.",
    );
    let mut server_warning = Family::new(
        "rotabloom_server_warning",
        "1 for each warning about the Redis server, by code and level.",
    );
    for r in reports {
        let i = &r.info;
        let name = i.name.as_str();
        up.add(filter(name), 1.0);
        let mut k = filter(name);
        k.push(("kind", i.kind.as_str().to_string()));
        kind.add(k, 1.0);
        items.add(filter(name), i.count as f64);
        capacity.add(filter(name), r.capacity() as f64);
        fill.add(filter(name), i.count as f64 / r.capacity().max(1) as f64);
        fpr.add(filter(name), i.false_positive_rate);
        bytes.add(filter(name), i.memory_bytes as f64);
        gens.add(filter(name), i.generations.len() as f64);
        epoch.add(filter(name), i.epoch as f64);
        if let Some(t) = r.next_rotation_at {
            next.add(
                filter(name),
                (t - server.now).num_milliseconds() as f64 / 1000.0,
            );
        }
        count_levels(name, &r.warnings, &mut warnings);
        for w in &r.warnings {
            let mut labels = filter(name);
            labels.push(("code", w.code.as_str().to_string()));
            labels.push(("level", level_label(w.level)));
            warning.add(labels, 1.0);
        }
    }
    for f in failed {
        up.add(filter(&f.name), 0.0);
    }
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
        &up,
        &kind,
        &items,
        &capacity,
        &fill,
        &fpr,
        &bytes,
        &gens,
        &epoch,
        &next,
        &warnings,
        &warning,
        &server_warning,
    ] {
        f.write(&mut out);
    }
    out
}

/// Writes `text` to `path` as the textfile collector needs: a regular
/// file is replaced whole (a scrape never reads half of it); a FIFO or a
/// device is written straight through (`crate::outfile`).
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
    let names = connect::names_or_all(&mut conn, names)?;
    let server = Server::read(&mut conn)?;
    // A filter that cannot be read is `rotabloom_filter_up 0`, not a
    // missing file: the exposition is written either way.
    let (reports, failed, worst) = status::collect(ctx, &mut conn, &names, &server)?;
    let text = render(&reports, &failed, &server);
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
