//! The module structure of `src/` has no import cycle: every reference of a
//! file to another module (`crate::a::b`, `super::x`, `$crate::a`) is an
//! edge between files, and the graph is acyclic. Declaring a submodule
//! (`mod x;`) is not an edge. Run with `--nocapture` to print the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/` but the binary's, with its module path.
fn modules(root: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin" && n != "lua") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(root).expect("under src");
            let mut parts: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// The module a path like `engine::data::DataMachine` refers to: its
/// longest prefix that is a module; a name the crate root re-exports
/// (`crate::Error`) is its defining module's.
fn resolve(path: &[&str], mods: &BTreeMap<String, PathBuf>) -> Option<String> {
    let found = (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|p| mods.contains_key(p));
    found.or_else(|| {
        let first = path.first()?;
        reexports(mods).get(*first).cloned()
    })
}

/// The names `lib.rs` re-exports (`pub use a::{B, C}`), and their modules.
fn reexports(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let lib = mods
        .get("")
        .and_then(|p| fs::read_to_string(p).ok())
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for item in lib.split(';') {
        let Some(rest) = item.trim().strip_prefix("pub use ") else {
            continue;
        };
        for path in paths(rest) {
            let Some((name, module)) = path.split_last() else {
                continue;
            };
            let name = name.split(" as ").last().unwrap_or(name).trim();
            let module: Vec<&str> = module.iter().map(String::as_str).collect();
            let m = (1..=module.len())
                .rev()
                .map(|n| module[..n].join("::"))
                .find(|p| mods.contains_key(p));
            if let Some(m) = m {
                out.insert(name.to_string(), m);
            }
        }
    }
    out
}

/// The paths a reference names, after its `crate::` or `super::`: one for
/// `a::b::C`, several for a group `{a::B, c::{D, E}}`.
fn paths(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 1;
        let mut items = Vec::new();
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => {
                    items.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 1 => {
                    items.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return items.into_iter().flat_map(paths).collect();
    }
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    let head: Vec<String> = text[..end]
        .split("::")
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if text[end..].starts_with('{') && text[..end].ends_with("::") {
        return paths(&text[end..])
            .into_iter()
            .map(|tail| head.iter().cloned().chain(tail).collect())
            .collect();
    }
    vec![head]
}

fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (name, path) in mods {
        let text = fs::read_to_string(path).expect("a source file");
        // Test code may reach anywhere; the structure is the code's.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let own: Vec<String> = name
            .split("::")
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        // In a mod.rs or a file, `super` is the parent module.
        let parent: Vec<String> = own[..own.len().saturating_sub(1)].to_vec();
        let mut targets = BTreeSet::new();
        for (marker, base) in [("crate::", Vec::new()), ("super::", parent)] {
            let mut rest = code.as_str();
            while let Some(i) = rest.find(marker) {
                rest = &rest[i + marker.len()..];
                for tail in paths(rest) {
                    let full: Vec<&str> = base.iter().chain(&tail).map(String::as_str).collect();
                    if let Some(t) = resolve(&full, mods) {
                        if t != *name && !t.is_empty() {
                            targets.insert(t);
                        }
                    }
                }
            }
        }
        graph.insert(name.clone(), targets);
    }
    graph
}

/// A cycle through `start`, if any (depth-first).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for t in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(t, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn src_has_no_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&root);
    assert!(mods.len() > 20, "found only {} modules", mods.len());
    let graph = edges(&mods);
    for (m, ts) in &graph {
        let shown = if m.is_empty() { "lib" } else { m };
        println!(
            "{shown} -> {}",
            ts.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // The crate root re-exports everything; it imports, nothing imports it.
    let graph: BTreeMap<_, _> = graph.into_iter().filter(|(m, _)| !m.is_empty()).collect();
    if let Some(c) = cycle(&graph) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn references_and_groups_are_read() {
    let p = paths("{a::B, c::{D, e::F}, g}; more");
    let joined: Vec<String> = p.iter().map(|v| v.join("::")).collect();
    assert_eq!(joined, ["a::B", "c::D", "c::e::F", "g"]);
    assert_eq!(
        paths("engine::data::DataMachine::new(x)")[0].join("::"),
        "engine::data::DataMachine::new"
    );
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    assert_eq!(cycle(&g).map(|c| c.len()), Some(4));
    g.insert("c".into(), BTreeSet::new());
    assert_eq!(cycle(&g), None);
}
