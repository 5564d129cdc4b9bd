//! `msgline bench --repeat N [--alternate BIN]`: a series of whole bench runs, each in its own
//! process, alternating this binary with another build (A, B, A, B, ...) so that a before/after
//! comparison is one command and the machine's drift falls on both sides alike. Every run's
//! report is kept; the table at the end shows every run, not the best.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// One run's line in the series table.
fn row(run: usize, label: &str, report: &Value) -> Vec<String> {
    let result = |name: &str| {
        report["results"].as_array().into_iter().flatten().find(|r| r["scenario"] == name && r.get("skipped").is_none())
    };
    let per_second = |name: &str| result(name).and_then(|r| r["per_second"].as_f64());
    let rate = |name: &str| per_second(name).map(|v| format!("{v:.0}"));
    let p99 = |name: &str| result(name).and_then(|r| r["p99_ms"].as_f64()).map(|v| format!("{v:.1}"));
    let ratio = |field: &str| report[field].as_f64().map(|v| format!("{v:.2}x"));
    let dash = || "-".to_string();
    vec![
        run.to_string(),
        label.to_string(),
        report["database"].as_str().unwrap_or("?").to_string(),
        rate("kannel").unwrap_or_else(dash),
        rate("send").unwrap_or_else(dash),
        ratio("send_to_kannel").unwrap_or_else(dash),
        p99("send").unwrap_or_else(dash),
        rate("e2e").unwrap_or_else(dash),
        ratio("kannel_line_to_kannel").unwrap_or_else(dash),
        ratio("wrk_send_to_kannel").unwrap_or_else(dash),
        ratio("wrk_send_new_to_kannel").unwrap_or_else(dash),
        match (per_second("webhooks"), per_second("send")) {
            (Some(hooks), Some(send)) if send > 0.0 => format!("{:.2}x", hooks / send),
            _ => dash(),
        },
        match (result("webhooks").and_then(|r| r["drain_per_second"].as_f64()), per_second("send")) {
            (Some(drain), Some(send)) if send > 0.0 => format!("{:.2}x", drain / send),
            _ => dash(),
        },
        p99("lag").unwrap_or_else(dash),
        report["server_rss_mib"]["peak"].as_f64().map(|v| format!("{v:.1}")).unwrap_or_else(dash),
    ]
}

/// Runs `bench ARGS --out …` `repeat` times with this binary, and as often with `alternate`
/// in between; prints every run's figures and writes them all to `out` when given.
pub async fn run(
    args: Vec<String>,
    repeat: usize,
    alternate: Option<PathBuf>,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    let this = std::env::current_exe()?;
    let mut binaries: Vec<(String, PathBuf)> = vec![("this".into(), this)];
    if let Some(other) = alternate {
        anyhow::ensure!(other.exists(), "--alternate {}: no such file", other.display());
        binaries.push((other.display().to_string(), other));
    }
    let dir = std::env::temp_dir().join(msgline::ids::new_id("bench-series"));
    std::fs::create_dir_all(&dir)?;
    let mut runs = Vec::new();
    for run in 1..=repeat.max(1) {
        for (label, binary) in &binaries {
            let path = dir.join(format!("run-{run}-{}.json", runs.len()));
            eprintln!("=== series run {run} of {}: {label} ===", repeat.max(1));
            let status =
                tokio::process::Command::new(binary).arg("bench").args(&args).arg("--out").arg(&path).status().await?;
            anyhow::ensure!(status.success(), "series run {run} ({label}) failed: {status}");
            let report: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
            runs.push(json!({"run": run, "binary": label, "report": report}));
        }
    }
    print_series(&runs);
    if let Some(out) = out {
        write(&out, &json!({"args": args, "runs": runs}))?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn print_series(runs: &[Value]) {
    let header = [
        "run",
        "binary",
        "db",
        "kannel/s",
        "send/s",
        "send/kannel",
        "send p99",
        "e2e/s",
        "line/kannel",
        "wrk send/kannel",
        "wrk new/kannel",
        "webhooks/send",
        "drain/send",
        "lag p99",
        "RSS peak",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| row(r["run"].as_u64().unwrap_or(0) as usize, r["binary"].as_str().unwrap_or("?"), &r["report"]))
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].len()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line =
        |cells: Vec<String>| cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ");
    println!("series (every run, in the order they ran):");
    println!("{}", line(header.iter().map(|h| h.to_string()).collect()));
    for row in rows {
        println!("{}", line(row));
    }
}

fn write(path: &Path, value: &Value) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(value)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
