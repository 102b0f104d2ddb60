//! larder-server's modules import each other only downwards, in the order
//! its crate docs give (admin → conn → wire → exec → state → restart →
//! auth → config → track → stampede → connmem → counters → trace → net),
//! so the import graph has no cycles.
//!
//! Read from the source: every `crate::<module>` path outside comments in a
//! file of one top-level module is an edge to that module. A new edge
//! upwards (say `trace` reaching for `state::server::Server`) fails here
//! with the file and line that made it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top to bottom. `main`/`lib` may use everything.
const LAYERS: [&str; 14] = [
    "admin", "conn", "wire", "exec", "state", "restart", "auth", "config", "track", "stampede", "connmem", "counters", "trace", "net",
];
/// `sync` (std or loom atomics and locks) and `alloc_count` (the allocation
/// counter of `--features alloc-count`) are leaves anyone may use.
const LEAVES: [&str; 2] = ["alloc_count", "sync"];
const ROOTS: [&str; 2] = ["main", "lib"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// (module used, line number) for each `crate::x` outside comments.
fn uses(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        assert!(!code.contains("crate::{"), "line {}: grouped `crate::{{…}}` imports hide edges; name each module", n + 1);
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.push((name, n + 1));
            }
        }
    }
    found
}

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|m| *m == module)
}

#[test]
fn modules_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut upward = Vec::new();
    for file in &files {
        let from = module_of(&src, file);
        let known = ROOTS.contains(&from.as_str()) || LEAVES.contains(&from.as_str()) || rank(&from).is_some();
        assert!(known, "{}: module `{from}` is not in the layer list of tests/layers.rs", file.display());
        let text = std::fs::read_to_string(file).unwrap();
        for (to, line) in uses(&text) {
            if to == from {
                continue;
            }
            graph.entry(from.clone()).or_default().insert(to.clone());
            let ok = ROOTS.contains(&from.as_str())
                || LEAVES.contains(&to.as_str())
                || matches!((rank(&from), rank(&to)), (Some(a), Some(b)) if a < b);
            if !ok {
                upward.push(format!("{}:{line}: `{from}` uses `{to}`", file.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(upward.is_empty(), "imports against the layer order:\n{}", upward.join("\n"));
    // The layers themselves must be used: a module list that no longer
    // matches the tree would make this test vacuous.
    for layer in LAYERS {
        assert!(files.iter().any(|f| module_of(&src, f) == layer), "layer `{layer}` has no source");
    }
    assert!(graph.values().map(BTreeSet::len).sum::<usize>() >= LAYERS.len(), "too few edges found: {graph:?}");
}

#[test]
fn the_scanner_sees_edges_and_ignores_comments() {
    let text = "use crate::state::server::Server;\n// crate::wire in a comment\nlet x = crate::trace::watch::on(); // crate::conn\n";
    let got: Vec<String> = uses(text).into_iter().map(|(m, _)| m).collect();
    assert_eq!(got, ["state", "trace"]);
}
