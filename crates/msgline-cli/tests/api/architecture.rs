//! The architecture test: the top-level modules of the server library (`crates/msgline/src/`)
//! import each other only downwards, in the order written below, and never in a circle. It reads
//! the `crate::…` paths of every source file, so a new import that points up, or a new module that
//! has no place, fails here with the files that do it. The storage layer has one door: nothing
//! outside `src/db/` calls a pool, and `db/engine/` names none of the table modules it serves.
//! And the server library depends on none of the tools built on it (crates/msgline-sim, -bench,
//! -demo, -cli): they sit above it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The layers, from the top down. A module may import any module of a lower layer, and one of
/// its own layer as long as no circle forms. docs/architecture.md draws the same picture.
const LAYERS: &[(&str, &[&str])] = &[
    ("the tests' window into the crate (feature `testing`)", &["testing"]),
    ("tools beside the server", &["admin", "fuzz", "telemetry"]),
    ("wiring, done once", &["app"]),
    ("the edges: the API, the console's pages and MCP, none importing another", EDGES),
    ("the HTTP server under both HTTP edges", &["web"]),
    ("the background work", &["workers"]),
    ("the services floor, one module per resource", &["services"]),
    ("services that use the send path", &["agents", "inbound"]),
    ("the one send path", &["send"]),
    ("who acts", &["caller"]),
    ("lines as capacity: budgets, health, who sends next", &["lines"]),
    ("the hand-over to the dispatcher", &["dispatch"]),
    ("the line seam", &["bridge"]),
    ("storage", &["db"]),
    (
        "types, rules and leaves",
        &["domain", "fields", "error", "config", "egress", "media", "ratelimit", "metrics", "trace", "ids", "clock"],
    ),
];

/// The edges: each parses its own kind of request, calls the services and answers. None imports
/// another; what two of them share lives below them (`web` for both HTTP edges, `services`).
const EDGES: &[&str] = &["api", "console", "mcp"];

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
    names_after(code, "crate::")
}

/// The names a file's code writes right after `prefix`, alone or in a group.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
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
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Every source file of the server library: its path under `src/` and its code without comments.
fn sources() -> Vec<(String, String)> {
    let src = server_crate().join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).expect("under src").to_string_lossy().to_string();
            (relative, code_of(&std::fs::read_to_string(file).expect("a source file")))
        })
        .collect()
}

/// The top-level modules' imports.
fn imports() -> Graph {
    let src = server_crate().join("src");
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
    let mut graph = Graph::new();
    for (relative, code) in sources() {
        // lib.rs declares the modules and the library's surface.
        if relative == "lib.rs" {
            continue;
        }
        let module = relative.split('/').next().unwrap().trim_end_matches(".rs").to_string();
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

/// Each import of one edge by another, as a sentence naming the files.
fn edge_crossings(graph: &Graph) -> Vec<String> {
    let mut wrong = Vec::new();
    for edge in EDGES {
        for (target, files) in graph.get(*edge).into_iter().flatten() {
            if EDGES.contains(&target.as_str()) {
                wrong.push(format!("the edge {edge} imports the edge {target}, in {files:?}"));
            }
        }
    }
    wrong
}

#[test]
fn no_edge_imports_another_edge() {
    let wrong = edge_crossings(&imports());
    assert!(wrong.is_empty(), "edges import each other:\n{}", wrong.join("\n"));
}

#[test]
fn an_edge_importing_another_is_found() {
    // A planted crossing: the console reaching into the API, as it did for keys and webhooks.
    let mut graph = imports();
    graph.entry("console".into()).or_default().entry("api".into()).or_default().insert("console/keys.rs".into());
    assert_eq!(edge_crossings(&graph), ["the edge console imports the edge api, in {\"console/keys.rs\"}"]);
}

/// Inside each folder of the server library: a module directly in it (`db/webhooks.rs`,
/// `send/groups.rs`, `db/engine/` with what is under it) → the sibling modules it names
/// (`super::x`, `crate::db::x`) → the files that do. Keys are `folder/module`.
fn sibling_imports() -> Graph {
    let src = server_crate().join("src");
    // Each folder's module names, read once.
    let mut siblings_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut graph = Graph::new();
    for (relative, code) in sources() {
        let parts: Vec<&str> = relative.split('/').collect();
        // `super::` means the folder in its own files and a module's mod.rs, not deeper down.
        let (folder, module, super_is_folder) = match parts.as_slice() {
            [] | [_] | [_, "mod.rs"] => continue,
            [folder, file] => (*folder, file.trim_end_matches(".rs"), true),
            [folder, module, "mod.rs"] => (*folder, *module, true),
            [folder, module, ..] => (*folder, *module, false),
        };
        let siblings = siblings_of.entry(folder.to_string()).or_insert_with(|| modules_in(&src.join(folder)));
        let mut named = names_after(&code, &format!("crate::{folder}::"));
        if super_is_folder {
            named.extend(names_after(&code, "super::"));
        }
        let entry = graph.entry(format!("{folder}/{module}")).or_default();
        for name in named.into_iter().filter(|n| n != module && siblings.contains(n)) {
            entry.entry(format!("{folder}/{name}")).or_default().insert(relative.clone());
        }
    }
    graph
}

/// The modules a folder declares: its files and folders (`webhooks.rs`, `engine/`), but `mod.rs`.
fn modules_in(folder: &Path) -> BTreeSet<String> {
    std::fs::read_dir(folder)
        .expect("a folder")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|name| name != "mod")
        .collect()
}

/// Every circle among the modules of one folder.
fn sibling_circles(graph: &Graph) -> Vec<String> {
    let mut circles: Vec<String> =
        graph.keys().filter_map(|start| circle_from(graph, start)).map(|circle| circle.join(" -> ")).collect();
    circles.sort();
    circles
}

#[test]
fn no_two_modules_of_a_folder_import_each_other_round_a_circle() {
    let circles = sibling_circles(&sibling_imports());
    assert!(circles.is_empty(), "modules of one folder import each other:\n{}", circles.join("\n"));
}

#[test]
fn a_circle_inside_a_folder_is_found() {
    // A planted circle: the deliveries staging the fan-out's rows, as a replay did.
    let mut graph = sibling_imports();
    graph
        .entry("db/webhook_deliveries".into())
        .or_default()
        .entry("db/webhook_fan_out".into())
        .or_default()
        .insert("db/webhook_deliveries.rs".into());
    let circles = sibling_circles(&graph);
    assert!(
        circles.iter().any(|c| c == "db/webhook_deliveries -> db/webhook_fan_out -> db/webhook_deliveries"),
        "{circles:?}"
    );
}

/// The shortest path of imports from `start` back to itself, if there is one.
fn circle_from(graph: &Graph, start: &str) -> Option<Vec<String>> {
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

/// What only `db` calls: its pools (and the tests' own accessors to them, compiled for the tests
/// alone), and the question of where an opt-out is checked, which the send path leaves to
/// `db::opt_outs::check_now_or_at_commit`.
const DB_ONLY: &[&str] = &[".reader()", ".writer()", ".reader_for_tests()", ".writer_for_tests()", "refuses_in_commit"];

/// Each call of what only `db` calls, made by a file outside `src/db/`, as a sentence naming the
/// file and the line.
fn pool_calls_outside_db(sources: &[(String, String)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (relative, code) in sources.iter().filter(|(relative, _)| !relative.starts_with("db/")) {
        for (at, line) in code.lines().enumerate() {
            for call in DB_ONLY.iter().filter(|call| line.contains(**call)) {
                wrong.push(format!("{relative}:{} calls {call}", at + 1));
            }
        }
    }
    wrong.sort();
    wrong
}

#[test]
fn nothing_outside_db_calls_a_pool() {
    let wrong = pool_calls_outside_db(&sources());
    assert!(
        wrong.is_empty(),
        "the pools are db's alone; outside src/db/ use Db's operations (commit, transaction, read, write) or a \
         table module's function:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_pool_called_outside_db_is_found() {
    // Planted calls: a worker reading through the pool itself, as the fallback worker did, and the
    // send path asking where refusals run; `db`'s own files call the pools freely.
    let planted = [
        ("workers/fallback.rs", "let due = 1;\nlet _ = state.db.reader(); // not .writer()"),
        ("send/resolve.rs", "if state.db.refuses_in_commit() {}"),
        ("db/messages.rs", "query.fetch_all(db.reader())"),
    ];
    let sources = planted.map(|(file, code)| (file.to_string(), code_of(code)));
    assert_eq!(
        pool_calls_outside_db(&sources),
        ["send/resolve.rs:1 calls refuses_in_commit", "workers/fallback.rs:2 calls .reader()"]
    );
}

/// Each table module of `db` (a file or folder of `src/db/` but `engine`) that a file under
/// `src/db/engine/` names, through `crate::db::` or the `super::` that reaches `db` from it, as a
/// sentence naming the file. The engine runs units of work whatever their tables: the table
/// modules use it, never the other way round.
fn engine_naming_tables(sources: &[(String, String)]) -> Vec<String> {
    let mut tables = modules_in(&server_crate().join("src").join("db"));
    tables.remove("engine");
    let mut wrong = Vec::new();
    for (relative, code) in sources.iter().filter(|(relative, _)| relative.starts_with("db/engine/")) {
        // One `super::` per module between the file and `db`: `db/engine/mod.rs` is one below it.
        let below_db = relative.trim_end_matches(".rs").trim_end_matches("/mod").matches('/').count();
        let mut named = names_after(code, "crate::db::");
        named.extend(names_after(code, &"super::".repeat(below_db)));
        for table in named.intersection(&tables) {
            wrong.push(format!("{relative} names the table module db::{table}"));
        }
    }
    wrong.sort();
    wrong
}

#[test]
fn the_engine_names_no_table_module() {
    let wrong = engine_naming_tables(&sources());
    assert!(wrong.is_empty(), "db/engine reaches into the tables it serves:\n{}", wrong.join("\n"));
}

#[test]
fn the_engine_naming_a_table_module_is_found() {
    // Planted names: the committer reading the reports' module, and a test of the native lane
    // reading a message; the storage layer's own items (`super::super::is_unique_violation`,
    // `crate::db::Batch`) and the engine's own modules (`super::native`) are no table module.
    let planted = [
        ("db/engine/group_commit.rs", "use super::native;\nuse super::super::{Batch, reports::LineReports};"),
        (
            "db/engine/native/tests.rs",
            "crate::db::messages::get_any(conn, id);\nsuper::super::is_unique_violation(e);\ncrate::db::Batch::new();",
        ),
        ("db/engine/mod.rs", "use super::{Backend, Columns, Db, is_unique_violation};"),
    ];
    let sources = planted.map(|(file, code)| (file.to_string(), code_of(code)));
    assert_eq!(
        engine_naming_tables(&sources),
        [
            "db/engine/group_commit.rs names the table module db::reports",
            "db/engine/native/tests.rs names the table module db::messages",
        ]
    );
}
