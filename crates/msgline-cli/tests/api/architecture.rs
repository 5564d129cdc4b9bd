//! The architecture test: the top-level modules of the server library (`crates/msgline/src/`)
//! import each other only downwards, in the order written below, and never in a circle. It reads
//! the `crate::…` paths of every source file, so a new import that points up, or a new module that
//! has no place, fails here with the files that do it. And the server library depends on none of
//! the tools built on it (crates/msgline-sim, -bench, -demo, -cli): they sit above it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The layers, from the top down. A module may import any module of a lower layer, and one of
/// its own layer as long as no circle forms. docs/architecture.md draws the same picture.
const LAYERS: &[(&str, &[&str])] = &[
    ("the tests' window into the crate (feature `testing`)", &["testing"]),
    ("tools beside the server", &["admin", "mcp", "fuzz", "telemetry"]),
    ("wiring, done once", &["app"]),
    ("the console's pages, which use the API's state", &["console"]),
    ("the edge and the background work", &["api", "workers"]),
    ("services that use the send path", &["agents", "inbound"]),
    ("the one send path", &["send"]),
    ("who acts", &["caller"]),
    ("the hand-over to the dispatcher", &["dispatch"]),
    ("the line seam", &["bridge"]),
    ("storage", &["db"]),
    (
        "types, rules and leaves",
        &["domain", "fields", "error", "config", "egress", "media", "ratelimit", "metrics", "ids", "clock"],
    ),
];

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of a file without its comments (a doc comment may name a path it does not import).
fn code_of(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The top-level modules a file's code names through `crate::`, written alone (`crate::db::x`)
/// or in a group (`use crate::{db, send::Sender}`).
fn modules_named(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at depth one of the group.
            let (mut depth, mut item) = (1, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        named.insert(first_word(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 1 {
                    item.push(c);
                }
            }
            named.insert(first_word(&item));
        } else {
            named.insert(first_word(rest));
        }
    }
    named.remove("");
    named
}

fn first_word(text: &str) -> String {
    text.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// The server library's directory, beside this package's.
fn server_crate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/").join("msgline")
}

/// module → (module it imports → the files that do).
fn imports() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = server_crate().join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    // Names lib.rs hands on at the crate's root (`pub use config::Config;`) belong to their module.
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let root_names: BTreeMap<String, String> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub use "))
        .filter_map(|path| {
            let path = path.trim_end_matches(';');
            // `pub use mcp::run as run_mcp;` names `run_mcp` at the root.
            let (path, name) = path.split_once(" as ").unwrap_or((path, path.rsplit("::").next()?));
            Some((name.to_string(), path.split("::").next()?.to_string()))
        })
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src").to_string_lossy().to_string();
        // lib.rs declares the modules and the library's surface.
        if relative == "lib.rs" {
            continue;
        }
        let module = relative.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        let code = code_of(&std::fs::read_to_string(&file).expect("a source file"));
        let entry = graph.entry(module.clone()).or_default();
        for named in modules_named(&code) {
            let named = root_names.get(&named).cloned().unwrap_or(named);
            if named != module {
                entry.entry(named).or_default().insert(relative.clone());
            }
        }
    }
    graph
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

#[test]
fn every_module_has_a_layer_and_imports_only_downwards_or_beside_without_a_circle() {
    let graph = imports();
    let mut wrong = Vec::new();
    for (module, imported) in &graph {
        let Some(layer) = layer_of(module) else {
            wrong.push(format!("src/{module} has no layer: place it in LAYERS (tests/api/architecture.rs)"));
            continue;
        };
        for (target, files) in imported {
            let Some(target_layer) = layer_of(target) else {
                wrong.push(format!("{module} imports {target}, which has no layer"));
                continue;
            };
            if target_layer < layer {
                let (above, below) = (LAYERS[target_layer].0, LAYERS[layer].0);
                wrong.push(format!("{module} ({below}) imports {target} ({above}), a layer above it, in {files:?}"));
            }
        }
    }
    // Circles: a module reaching itself again through its imports.
    for start in graph.keys() {
        if let Some(circle) = circle_from(&graph, start) {
            wrong.push(format!("an import circle: {}", circle.join(" -> ")));
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "the layers are broken:\n{}", wrong.join("\n"));
}

/// The shortest path of imports from `start` back to itself, if there is one.
fn circle_from(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>, start: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(here) = queue.pop_front() {
        for next in graph.get(&here).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                // here, back to start through what found each, then start again.
                let mut circle = vec![here.clone()];
                let mut at = here.clone();
                while let Some(before) = came_from.get(&at) {
                    circle.push(before.clone());
                    at = before.clone();
                }
                circle.reverse();
                circle.push(start.to_string());
                return Some(circle);
            }
            if next != start && !came_from.contains_key(next) {
                came_from.insert(next.clone(), here.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}

#[test]
fn the_reader_of_imports_finds_single_and_grouped_paths_and_ignores_comments() {
    let code = code_of(
        "use crate::{db::{self, Db}, send::Sender,\n  domain};\n// crate::workers is named in a comment\nlet x = crate::clock::now_ms();",
    );
    let named: Vec<String> = modules_named(&code).into_iter().collect();
    assert_eq!(named, ["clock", "db", "domain", "send"]);
}

/// The crates of the workspace built on the server library. The server must not depend on them:
/// Cargo refuses a circle between packages, but a tool's code pulled into the server (through a
/// dependency added for it) would break the layers above from below.
const TOOL_CRATES: [&str; 4] = ["msgline-sim", "msgline-bench", "msgline-demo", "msgline-cli"];

#[test]
fn the_server_library_depends_on_none_of_the_tools() {
    let manifest = std::fs::read_to_string(server_crate().join("Cargo.toml")).expect("crates/msgline/Cargo.toml");
    let named: Vec<&str> = manifest
        .lines()
        .filter_map(|line| line.split(['=', '.', ' ']).next())
        .filter(|name| TOOL_CRATES.contains(name))
        .collect();
    assert!(named.is_empty(), "crates/msgline/Cargo.toml names the tool crates {named:?}");
    let mut files = Vec::new();
    source_files(&server_crate().join("src"), &mut files);
    for file in files {
        let code = code_of(&std::fs::read_to_string(&file).expect("a source file"));
        for tool in TOOL_CRATES {
            let path = format!("{}::", tool.replace('-', "_"));
            assert!(!code.contains(&path), "{} names {path}", file.display());
        }
    }
}
