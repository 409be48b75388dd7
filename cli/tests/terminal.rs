//! What a person at a terminal sees, on a real pseudo-terminal: colour on
//! errors, warnings, help and `status`, as `--color`, `NO_COLOR` and
//! `CLICOLOR_FORCE` say; never colour into a pipe unless forced. And the
//! help itself: no arguments print it whole, each command's help has its
//! examples and points to the global flags instead of repeating them.

#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use nix::pty::{openpty, Winsize};
use std::fs::File;
use std::io::Read;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rotabloom");
const ESC: &str = "\x1b[";

fn base(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    for var in ["REDIS_URL", "NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "CI"] {
        c.env_remove(var);
    }
    c.env("TERM", "xterm-256color")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    c
}

/// Runs `rotabloom ARGS` with standard output and error on a new
/// pseudo-terminal; returns the exit code and what the terminal showed
/// (without the `\r` the terminal adds).
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let size = Winsize {
        ws_row: 50,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(&size, None).expect("openpty");
    let mut c = base(args, env);
    c.stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave));
    let mut child = c.spawn().expect("spawn rotabloom");
    // `c` holds the last copies of the terminal's slave side: once it is
    // gone, the master reads an end (EIO) when the child exits.
    drop(c);
    let mut master = File::from(pty.master);
    let mut shown = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => shown.extend_from_slice(&buf[..n]),
        }
    }
    let code = child.wait().unwrap().code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&shown).replace('\r', ""))
}

/// Runs it with both streams piped: (code, stdout, stderr).
fn piped(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = base(args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `text` without its ANSI escape sequences.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(ESC) {
        out.push_str(&rest[..i]);
        let tail = &rest[i + ESC.len()..];
        let end = tail
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(tail.len(), |e| e + 1);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

const DOWN: &str = "redis://127.0.0.1:1";

#[test]
fn errors_are_coloured_on_a_terminal_only() {
    let args = ["--redis", DOWN, "status"];
    let (code, shown) = on_terminal(&args, &[]);
    assert_eq!(code, 3, "{shown:?}");
    assert!(shown.starts_with(ESC), "coloured: {shown:?}");
    let (_, _, err) = piped(&args, &[]);
    assert!(!err.contains(ESC), "no colour into a pipe: {err:?}");
    // The same words either way.
    assert_eq!(plain(&shown), err);
    assert!(err.starts_with("rotabloom: cannot connect to redis://127.0.0.1:1: "));

    // Turned off on the terminal.
    for (args, env) in [
        (
            &["--color", "never", "--redis", DOWN, "status"][..],
            &[][..],
        ),
        (&["--color=never", "--redis", DOWN, "status"], &[]),
        (&args[..], &[("NO_COLOR", "1")]),
    ] {
        let (_, shown) = on_terminal(args, env);
        assert!(!shown.contains(ESC), "{args:?} {env:?}: {shown:?}");
        assert_eq!(shown, err);
    }
    // Forced into a pipe; the flag beats NO_COLOR.
    for (args, env) in [
        (
            &["--color", "always", "--redis", DOWN, "status"][..],
            &[][..],
        ),
        (&args[..], &[("CLICOLOR_FORCE", "1")]),
        (
            &["status", "--redis", DOWN, "--color", "always"],
            &[("NO_COLOR", "1")],
        ),
    ] {
        let (_, _, forced) = piped(args, env);
        assert!(forced.starts_with(ESC), "{args:?} {env:?}: {forced:?}");
        assert_eq!(plain(&forced), err);
    }
}

#[test]
fn help_and_status_are_coloured_on_a_terminal() {
    let (code, shown) = on_terminal(&["--help"], &[]);
    assert_eq!(code, 0);
    assert!(shown.contains(ESC), "{shown:?}");
    let (_, out, _) = piped(&["--help"], &[]);
    assert!(!out.contains(ESC), "{out:?}");
    assert!(plain(&shown).contains("Connection:") && out.contains("Connection:"));

    let server = RedisServer::start();
    let url = server.url();
    let (code, _, _) = piped(
        &[
            "--redis",
            &url,
            "create",
            "small",
            "--kind",
            "bloom",
            "--capacity",
            "10",
        ],
        &[],
    );
    assert_eq!(code, 0);
    let items: Vec<String> = (0..9).map(|i| format!("i{i}")).collect();
    let mut args = vec!["--redis", url.as_str(), "add", "small"];
    args.extend(items.iter().map(String::as_str));
    assert_eq!(piped(&args, &[]).0, 0);
    // A filter at 90% of its capacity has a warning (at 100% an error);
    // the harness's server has no persistence, a server warning.
    let (code, shown) = on_terminal(&["--redis", &url, "status"], &[]);
    assert_eq!(code, 0, "{shown:?}");
    let (_, out, _) = piped(&["--redis", &url, "status"], &[]);
    assert!(!out.contains(ESC), "{out:?}");
    assert_eq!(plain(&shown), out);
    assert!(
        out.contains("  warning: ") && out.contains("\nwarning: server: "),
        "{out}"
    );
    // The level words are coloured, the name set off.
    // The level words in bold yellow, the filter's name in bold.
    assert!(
        shown.contains(&format!("  {ESC}1m{ESC}33mwarning{ESC}0m: "))
            && shown.contains(&format!("\n{ESC}1m{ESC}33mwarning{ESC}0m: server: ")),
        "{shown:?}"
    );
    assert!(
        shown.starts_with(&format!("{ESC}1msmall{ESC}0m: bloom")),
        "{shown:?}"
    );
}

#[test]
fn no_arguments_print_the_help_whole() {
    let (code, out, err) = piped(&[], &[]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    // The help as help, not squashed into one error line.
    assert!(err.lines().count() > 40, "{err}");
    for heading in [
        "Commands:",
        "Connection:",
        "TLS:",
        "Writes:",
        "Throughput:",
        "Output:",
        "Examples:",
        "Exit codes:",
    ] {
        assert!(err.contains(&format!("\n{heading}\n")), "{heading}: {err}");
    }
}

#[test]
fn each_command_points_to_the_global_flags_and_shows_examples() {
    let (_, top, _) = piped(&["--help"], &[]);
    let globals = [
        "--config",
        "--redis",
        "--timeout",
        "--retries",
        "--tls-ca",
        "--tls-cert",
        "--tls-key",
        "--tls-insecure",
        "--wait-replicas",
        "--wait-timeout-ms",
        "--when-full",
        "--mirror-mib",
        "--in-flight",
        "--color",
    ];
    for g in globals {
        // Listed once, under its heading.
        let listed = format!("\n      {g} ");
        assert_eq!(top.matches(&listed).count(), 1, "{g} once in: {top}");
    }
    let commands: Vec<String> = top
        .split("\nCommands:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("  ").and_then(|l| l.split(' ').next()))
        .filter(|c| !c.is_empty() && *c != "help")
        .map(str::to_string)
        .collect();
    assert!(commands.len() >= 18, "{commands:?}");
    for c in &commands {
        for flag in ["--help", "-h"] {
            let (code, help, _) = piped(&[c, flag], &[]);
            assert_eq!(code, 0, "{c}");
            for g in globals {
                for listed in [format!("\n      {g} "), format!("\n      {g}\n")] {
                    assert!(!help.contains(&listed), "{g} in {c} {flag}: {help}");
                }
            }
            assert!(
                help.contains("Global options (where Redis is, TLS, writes, throughput, colour): rotabloom --help"),
                "{c}: {help}"
            );
            let examples = help
                .split("\nExamples:\n")
                .nth(1)
                .unwrap_or_else(|| panic!("{c}: {help}"));
            assert!(examples.contains("rotabloom"), "{c}: {help}");
        }
    }
    // The global flags still work after the command's name.
    let (code, _, err) = piped(&["status", "--redis", DOWN, "--retries", "0"], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("(the URL of --redis)"), "{err}");
}

#[test]
fn version_names_the_commit_and_the_features() {
    let (code, out, _) = piped(&["--version"], &[]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("rotabloom {}", env!("CARGO_PKG_VERSION")));
    let field = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("{name} in {out}"))
    };
    // Built in this checkout: the commit is git's.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(head) if std::env::var("ROTABLOOM_COMMIT").is_err() => {
            assert!(field("commit:").starts_with(&head), "{out}")
        }
        _ => assert!(!field("commit:").is_empty(), "{out}"),
    }
    assert_eq!(field("format:"), "1");
    assert!(field("features:").contains("+cluster"), "{out}");
    // -V stays one line, for scripts.
    let (_, short, _) = piped(&["-V"], &[]);
    assert_eq!(short, format!("rotabloom {}\n", env!("CARGO_PKG_VERSION")));
}
