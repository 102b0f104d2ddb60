//! larder-server's modules import each other only downwards, in the order
//! its crate docs give (admin → conn → wire → exec → state → restart →
//! auth → config → track → stampede → connmem → counters → trace → net),
//! so the import graph has no cycles; and the modules of larder-proto and
//! larder-store (the crates in `ACYCLIC`, below) import each other without
//! circles.
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

// ---------------------------------------------------------------------------
// larder-proto and larder-store: no import circles between their modules.
//
// These crates have no layer order to keep; what is checked is that no two
// of their top-level modules import each other, directly or through others.
// The crates and where their sources are: `ACYCLIC`. Modules are the
// `mod` declarations of the crate's lib.rs (test-only ones left out); an
// edge is a `crate::<module>` path, a module named in a grouped
// `crate::{…}` import, or an item the crate root re-exports from a module
// (`pub use module::Item` in lib.rs, then `crate::Item`). Items defined in
// lib.rs itself are the crate's root, above every module, and no edge.
// Test code (`#[cfg(test)]` items and the files they include) is left out:
// a module's tests may drive it through any other module.

/// (crate, its `src` relative to this crate's directory).
const ACYCLIC: [(&str, &str); 2] = [("larder-proto", "../larder-proto/src"), ("larder-store", "../larder-store/src")];

/// The top-level modules lib.rs declares outside `#[cfg(test)]`.
fn declared_modules(lib: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut test_only = false;
    for line in lib.lines() {
        let t = line.trim();
        if t.starts_with("#[") {
            test_only |= t.starts_with("#[cfg(test)]");
            continue;
        }
        let t = t.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
        if let Some(name) = t.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            if !test_only {
                out.insert(name.trim().to_string());
            }
        }
        test_only = false;
    }
    out
}

/// Names lib.rs re-exports from a module (`pub use module::{A, B as C}`):
/// exported name -> module.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let code = code_only(lib);
    for stmt in code.split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let path = path.trim_start_matches("crate::").trim_start_matches("self::");
        let module: String = path.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !modules.contains(&module) {
            continue;
        }
        let rest = &path[module.len()..];
        for item in rest.split(['{', '}', ',']) {
            let item = item.trim().trim_start_matches("::");
            // `a::b::C as D` exports `D`; `a::C` exports `C`.
            let name = item.rsplit(" as ").next().unwrap_or("").rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() && name != "self" {
                out.insert(name.to_string(), module.clone());
            }
        }
    }
    out
}

/// `text` without comments and without `#[cfg(test)]` items (a test
/// module, inline or from a file, or a test-only function or import);
/// line breaks are kept so line numbers still match.
fn code_only(text: &str) -> String {
    let mut out = String::new();
    let mut skip: Option<String> = None; // the closing line of a skipped item
    let mut pending_test = false;
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        if let Some(end) = &skip {
            if code.trim_end() == end {
                skip = None;
            }
            out.push('\n');
            continue;
        }
        let t = code.trim();
        if t == "#[cfg(test)]" {
            pending_test = true;
        } else if pending_test && !t.starts_with("#[") && !t.is_empty() {
            pending_test = false;
            if t.ends_with('{') {
                let indent = &code[..code.len() - code.trim_start().len()];
                skip = Some(format!("{indent}}}"));
            }
            out.push('\n');
            continue;
        }
        if !pending_test {
            out.push_str(code);
        }
        out.push('\n');
    }
    out
}

/// (name, line number) of each first segment after `crate::`, group
/// members included (`crate::{a, b::C}` gives `a` and `b`).
fn crate_paths(code: &str) -> Vec<(String, usize)> {
    let ident = |s: &str| -> String { s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let mut found = Vec::new();
    let mut line_of = Vec::new(); // byte offset -> line: start offsets of lines
    let mut off = 0;
    for l in code.split_inclusive('\n') {
        line_of.push(off);
        off += l.len();
    }
    let line = |at: usize| line_of.partition_point(|&s| s <= at);
    let mut at = 0;
    while let Some(i) = code[at..].find("crate::") {
        let start = at + i + "crate::".len();
        at = start;
        let rest = &code[start..];
        if let Some(group) = rest.strip_prefix('{') {
            // Entries at depth 1 of the braces.
            let mut depth = 1;
            let mut entry_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => entry_start = true,
                    c if entry_start && depth == 1 && !c.is_whitespace() => {
                        entry_start = false;
                        let name = ident(&group[j..]);
                        if !name.is_empty() {
                            found.push((name, line(start + 1 + j)));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                found.push((name, line(start)));
            }
        }
    }
    found
}

/// The source files of top-level module `m`: `m.rs` or `m/…`, and the
/// files they include with `#[path]` outside test code.
fn module_files(src: &Path, m: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let dir = src.join(m);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    }
    let file = src.join(format!("{m}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut i = 0;
    while i < files.len() {
        let code = code_only(&std::fs::read_to_string(&files[i]).unwrap());
        for part in code.split("#[path = \"").skip(1) {
            let name = &part[..part.find('"').unwrap()];
            files.push(files[i].parent().unwrap().join(name));
        }
        i += 1;
    }
    files.sort();
    files
}

/// One circle in `graph`, as the modules on it, if there is any.
fn find_cycle(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for to in graph.get(m).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(to, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

/// Module -> (module it uses -> where, the first time).
fn import_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules = declared_modules(&lib);
    let exported = reexports(&lib, &modules);
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for m in &modules {
        let files = module_files(src, m);
        assert!(!files.is_empty(), "{}: module `{m}` has no source file", src.display());
        let edges = graph.entry(m.clone()).or_default();
        for file in files {
            let code = code_only(&std::fs::read_to_string(&file).unwrap());
            for (name, line) in crate_paths(&code) {
                let to = if modules.contains(&name) { Some(&name) } else { exported.get(&name) };
                if let Some(to) = to.filter(|to| *to != m) {
                    let at = format!("{}:{line}", file.strip_prefix(src).unwrap().display());
                    edges.entry(to.clone()).or_insert(at);
                }
            }
        }
    }
    graph
}

#[test]
fn proto_and_store_modules_import_each_other_without_circles() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    for (name, dir) in ACYCLIC {
        let graph = import_graph(&here.join(dir));
        // A scan that found nothing would pass vacuously.
        let edges: usize = graph.values().map(BTreeMap::len).sum();
        assert!(graph.len() >= 3 && edges >= graph.len() / 2, "{name}: too few modules or edges found: {graph:?}");
        if let Some(cycle) = find_cycle(&graph) {
            let hops: Vec<String> = cycle.windows(2).map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]])).collect();
            failures.push(format!("{name}: {}", hops.join(", ")));
        }
    }
    assert!(failures.is_empty(), "import circles:\n{}", failures.join("\n"));
}

#[test]
fn the_circle_scanner_reads_groups_reexports_and_skips_tests() {
    let lib = "pub mod a;\nmod b;\n#[cfg(test)]\nmod c_tests;\npub use b::{Thing, inner::Other as Renamed};\n";
    let modules = declared_modules(lib);
    assert_eq!(modules.iter().map(String::as_str).collect::<Vec<_>>(), ["a", "b"]);
    let exported = reexports(lib, &modules);
    assert_eq!(exported.get("Thing").map(String::as_str), Some("b"));
    assert_eq!(exported.get("Renamed").map(String::as_str), Some("b"));
    let code = code_only(
        "use crate::{a, b::X, Thing};\n// crate::c\nfn f() { crate::a::g(); }\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n#[cfg(test)]\nuse crate::b::Y;\n",
    );
    let got: Vec<(String, usize)> = crate_paths(&code);
    let names: Vec<(&str, usize)> = got.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    assert_eq!(names, [("a", 1), ("b", 1), ("Thing", 1), ("a", 3)]);
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeMap::from([("b".to_string(), "a.rs:1".to_string())]));
    graph.insert("b".to_string(), BTreeMap::from([("a".to_string(), "b.rs:1".to_string())]));
    assert_eq!(find_cycle(&graph), Some(vec!["a".to_string(), "b".to_string(), "a".to_string()]));
    graph.get_mut("b").unwrap().clear();
    assert_eq!(find_cycle(&graph), None);
}
