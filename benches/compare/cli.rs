//! The command line at the server's limit: `rotabloom filter` and
//! `rotabloom load` on URL lines against raw pipelined BITFIELD
//! check-and-insert and insert with two batches in flight, same server,
//! same run; and the peak RSS of `filter` on a query-all circular filter of
//! 64 generations, with the mirror on (capped) and off.

use crate::catalog::{Spec, Target};
use crate::ctx::{e, Ctx};
use crate::stats::Summary;
use crate::targets::{Api, Op, R};
use crate::timing::{server_cpu, timed, Shape};
use rotabloom::{BloomFilter, CircularFilter, Mode};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// A finished child: wall seconds, exit status and peak RSS in bytes.
struct Ran {
    secs: f64,
    ok: bool,
    max_rss: u64,
    /// CPU seconds (user + system) of the child, from its last sample.
    cpu: f64,
}

/// User + system CPU seconds of a process so far (`/proc/PID/stat` fields
/// 14 and 15, in clock ticks of 1/100 s on Linux).
fn proc_cpu(stat: &str) -> Option<f64> {
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Runs `cmd` to its end, sampling its peak RSS (`VmHWM` of
/// `/proc/PID/status`, every 2 ms): `wait4`'s `ru_maxrss` would include
/// the bench's own RSS, which the kernel folds into a child that was
/// spawned from it at `exec`. The high-water mark only grows, so the last
/// sample is within 2 ms of the end of the true peak.
fn run(cmd: &mut Command) -> R<Ran> {
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|er| format!("cannot run the CLI: {er}"))?;
    let status_file = format!("/proc/{}/status", child.id());
    let stat_file = format!("/proc/{}/stat", child.id());
    let (mut max_rss, mut cpu) = (0u64, 0.0f64);
    let status = loop {
        if let Some(c) = std::fs::read_to_string(&stat_file)
            .ok()
            .as_deref()
            .and_then(proc_cpu)
        {
            cpu = cpu.max(c);
        }
        if let Some(kb) = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        }) {
            max_rss = max_rss.max(kb * 1024);
        }
        match child.try_wait().map_err(e)? {
            Some(status) => break status,
            None => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
    };
    Ok(Ran {
        secs: t0.elapsed().as_secs_f64(),
        ok: status.success(),
        max_rss,
        cpu,
    })
}

fn lines_in(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

pub fn cli_rows(ctx: &mut Ctx) -> R<Value> {
    let Some(bin) = ctx.cfg.cli.clone() else {
        return Err("no --cli / BENCH_CLI: command-line rows not measured".into());
    };
    let n = ctx.cfg.cli_lines.min(ctx.items.len());
    let dir = ctx
        .cfg
        .out
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    std::fs::create_dir_all(&dir).map_err(e)?;
    let input = dir.join("cli-lines.txt");
    let output = dir.join("cli-out.txt");
    let mut text = ctx.items[..n].join("\n");
    text.push('\n');
    std::fs::write(&input, text).map_err(e)?;
    let raw_t = Target::bare("raw-bitfield", Spec::Raw);
    let mut out = serde_json::Map::new();
    let res: R<()> = (|| {
        // Each command in both deliveries: the default keeps every
        // batch's answers on the server (exactly once), the other sends
        // guarded transactions without them.
        let rows = [
            ("filter", Op::Cai, "exactly-once", "filter"),
            ("filter", Op::Cai, "at-least-once", "filter_at_least_once"),
            ("load", Op::Insert, "exactly-once", "load"),
            ("load", Op::Insert, "at-least-once", "load_at_least_once"),
        ];
        for (sub, op, delivery, key) in rows {
            let (mut cli, mut raw, mut printed) = (Vec::new(), Vec::new(), Vec::new());
            let (mut srv, mut ccpu) = (Vec::new(), Vec::new());
            // Three runs: a million lines each already makes them steady.
            for run_ix in 0..ctx.cfg.runs.min(3) {
                let mut one_cli = |ctx: &mut Ctx| -> R<()> {
                    ctx.flush1()?;
                    BloomFilter::builder("cli")
                        .capacity(ctx.cfg.capacity)
                        .error_rate(ctx.cfg.p)
                        .create_or_open(&mut ctx.c1)
                        .map_err(e)?;
                    let mut probe = ctx.client1.get_connection().map_err(e)?;
                    let cpu0 = server_cpu(&mut probe)?;
                    let ran = run(Command::new(&bin)
                        .args(["--redis", &ctx.url1, sub, "cli"])
                        .args(if sub == "load" {
                            &["-", "--quiet"][..]
                        } else {
                            &[][..]
                        })
                        .env("ROTABLOOM_IN_FLIGHT", "2")
                        .env("ROTABLOOM_DELIVERY", delivery)
                        .stdin(std::fs::File::open(&input).map_err(e)?)
                        .stdout(std::fs::File::create(&output).map_err(e)?)
                        .stderr(Stdio::inherit()))?;
                    if !ran.ok {
                        return Err(format!("rotabloom {sub} failed"));
                    }
                    srv.push((server_cpu(&mut probe)? - cpu0) / ran.secs);
                    ccpu.push(ran.cpu / ran.secs);
                    cli.push(n as f64 / ran.secs);
                    printed.push(lines_in(&output));
                    Ok(())
                };
                let mut one_raw = |ctx: &mut Ctx| -> R<()> {
                    let h = ctx.reset(&raw_t)?;
                    let items = std::sync::Arc::clone(&ctx.items);
                    // Every line, as the command takes every line: no cap.
                    let shape = Shape {
                        batch: 1000,
                        inflight: 2,
                        cap: 1e6,
                    };
                    let t = timed(ctx, &h, Api::Sync, op, &items[..n], shape)?;
                    raw.push(t.done as f64 / t.secs);
                    Ok(())
                };
                // Alternate which goes first, so drift hits both alike.
                if run_ix % 2 == 0 {
                    one_cli(ctx)?;
                    one_raw(ctx)?;
                } else {
                    one_raw(ctx)?;
                    one_cli(ctx)?;
                }
            }
            let (c, r) = (Summary::of(&cli), Summary::of(&raw));
            eprintln!(
                "  rotabloom {sub} ({delivery}): {:.0} lines/s, raw {:.0} items/s: {:.3}x",
                c.median,
                r.median,
                c.median / r.median
            );
            out.insert(
                key.into(),
                json!({
                    "delivery": delivery,
                    "lines": n,
                    "cli_lines_per_s": c.json(),
                    "raw_items_per_s": r.json(),
                    "raw": format!("raw pipelined {} sync, batches of 1000, 2 in flight", op.name()),
                    "ratio": c.median / r.median,
                    "printed": printed,
                    "server_cpu_share": Summary::of(&srv).json(),
                    "cli_cpu_share": Summary::of(&ccpu).json(),
                }),
            );
        }
        out.insert("rss".into(), rss(ctx, &bin, &input)?);
        Ok(())
    })();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    res.map(|()| Value::Object(out))
}

/// Peak RSS of `filter` over 20,000 lines on a query-all circular filter
/// of 64 generations whose frozen ones hold more than the mirror's cap.
fn rss(ctx: &mut Ctx, bin: &Path, input: &Path) -> R<Value> {
    // The rounds are bounded in arguments, so a few thousand lines reach
    // the steady state; the 64 generations are read on the server.
    let lines = 20_000.min(ctx.cfg.cli_lines);
    let small = input.with_file_name("cli-rss.txt");
    let text: String = ctx.items[..lines]
        .iter()
        .map(|s| format!("{s}\n"))
        .collect();
    std::fs::write(&small, text).map_err(e)?;
    let mut out = serde_json::Map::new();
    ctx.flush1()?;
    let f = CircularFilter::builder("rss")
        .generations(64)
        .mode(Mode::InsertNewestQueryAll)
        .capacity(1_000_000)
        .error_rate(ctx.cfg.p)
        .create_or_open(&mut ctx.c1)
        .map_err(e)?;
    let frozen: u64 = f
        .info(&mut ctx.c1)
        .map_err(e)?
        .generations
        .iter()
        .map(|g| g.bits / 8)
        .sum();
    out.insert("frozen_bytes".into(), json!(frozen));
    for mib in [0u64, 64] {
        let ran = run(Command::new(bin)
            .args(["--redis", &ctx.url1, "filter", "rss"])
            .args(["--mirror-mib", &mib.to_string()])
            .stdin(std::fs::File::open(&small).map_err(e)?)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()))?;
        if !ran.ok {
            return Err("rotabloom filter (RSS) failed".into());
        }
        eprintln!(
            "  rotabloom filter, 64 generations, --mirror-mib {mib}: peak RSS {:.1} MiB",
            ran.max_rss as f64 / 1048576.0
        );
        out.insert(
            format!("mirror_mib_{mib}"),
            json!({"max_rss_bytes": ran.max_rss, "secs": ran.secs}),
        );
    }
    let _ = std::fs::remove_file(&small);
    out.insert("lines".into(), json!(lines));
    Ok(Value::Object(out))
}
