//! What `rotabloom --version` says about the build: the commit and the
//! target. The commit comes from `$ROTABLOOM_COMMIT` (for packagers), else
//! from `.cargo_vcs_info.json` (a crate as crates.io ships it), else from
//! git in a checkout of this repository, else it is "unknown" (a source
//! tarball). Hand-written: two git commands do not need a crate.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The commit `cargo package` recorded, if this is a packaged crate.
fn packaged(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let rest = &text[text.find("\"sha1\"")? + 6..];
    let start = rest.find('"')? + 1;
    let len = rest[start..].find('"')?;
    let sha = &rest[start..start + len];
    Some(sha.chars().take(12).collect())
}

/// The commit checked out, when `dir` is in a checkout of this
/// repository (not a tarball unpacked inside some other repository).
fn checkout(dir: &Path) -> Option<String> {
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?);
    let ours = dir.parent().and_then(|p| p.canonicalize().ok());
    if top.canonicalize().ok() != ours {
        return None;
    }
    let hash = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // Built again when HEAD moves: a checkout, a commit on the branch, or
    // the branch's ref packed.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    // Only files that exist: cargo builds again, every time, when a
    // watched file is missing (a fresh clone has its refs packed and no
    // loose ref; a repository never packed has no packed-refs). A ref
    // packed later removes the loose file watched, which is a change.
    for path in watched {
        if let Some(p) = git(dir, &["rev-parse", "--git-path", &path]) {
            let p = dir.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    Some(match git(dir, &["log", "-1", "--format=%cs", "HEAD"]) {
        Some(date) => format!("{hash} {date}"),
        None => hash,
    })
}

fn main() {
    println!("cargo:rerun-if-env-changed=ROTABLOOM_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let commit = match env::var("ROTABLOOM_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => packaged(&dir)
            .or_else(|| checkout(&dir))
            .unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=ROTABLOOM_COMMIT={commit}");
    let target = env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=ROTABLOOM_TARGET={target}");
}
