//! wrk as the load generator: the `wrk-kannel`, `wrk-send` and `wrk-send-new` scenarios make
//! the `kannel` and `send` scenarios' requests from wrk (scripts/wrk), a C program that costs the
//! machine less CPU per request than this process's HTTP clients, so that on 2 cores the figures
//! are the servers' and not the generator's. `wrk-send-new` sends each request to a number never
//! used before: the line is asked about each recipient's reachability, as a notification sender
//! to many numbers sees it.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::process::Command;

use super::{BenchArgs, Harness, peer, report};

const SEND: &str = include_str!("../../../scripts/wrk/send.lua");
const KANNEL: &str = include_str!("../../../scripts/wrk/kannel.lua");
const REPORT: &str = include_str!("../../../scripts/wrk/report.lua");

/// Whether wrk is on the PATH (`wrk -v` prints its version and exits 1).
pub fn installed() -> bool {
    std::process::Command::new("wrk").arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn skipped(scenario: &str) -> Value {
    json!({"scenario": scenario, "skipped": "wrk is not installed (apt-get install wrk; scripts/test installs it)"})
}

/// `wrk-send` (`new_numbers`: `wrk-send-new`) against the bench's server.
pub async fn scenario_send(h: &Harness, args: &BenchArgs, new_numbers: bool) -> anyhow::Result<Value> {
    let name = if new_numbers { "wrk-send-new" } else { "wrk-send" };
    if !installed() {
        return Ok(skipped(name));
    }
    let env = [("MSGLINE_KEYS", h.keys.join(",")), ("MSGLINE_NEW_NUMBERS", (new_numbers as u8).to_string())];
    drive(name, &h.base, SEND, &env, args).await
}

/// `wrk-kannel`: Kannel's sendsms, from wrk, in a Kannel of its own.
pub async fn scenario_kannel(args: &BenchArgs) -> anyhow::Result<Value> {
    if !installed() {
        return Ok(skipped("wrk-kannel"));
    }
    let script = peer::script();
    if !peer::installed() || !script.exists() {
        return Ok(json!({"scenario": "wrk-kannel", "skipped": "Kannel is not installed (scripts/kannel install)"}));
    }
    let (dir, url) = peer::start(&script).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // wrk takes the server's address; the script makes the path and query.
    let base = url.split("/cgi-bin").next().unwrap_or(&url).to_string();
    let result = drive("wrk-kannel", &base, KANNEL, &[], args).await;
    peer::stop(&script, &dir).await?;
    result
}

/// Runs wrk with `script` for the scenario's seconds and connections; its figures, with the
/// machine's CPU per request and wrk's own CPU.
async fn drive(
    name: &str,
    base: &str,
    script: &str,
    env: &[(&str, String)],
    args: &BenchArgs,
) -> anyhow::Result<Value> {
    let path = std::env::temp_dir().join(format!("{}.lua", msgline::ids::new_id("wrk")));
    std::fs::write(&path, format!("{script}\n{REPORT}"))?;
    let machine = report::machine_busy_ticks();
    let seconds = args.seconds.max(1.0).round() as u64;
    let mut child = Command::new("wrk")
        .args(["-t2", &format!("-c{}", args.connections.max(2)), &format!("-d{seconds}s"), "--timeout", "10s"])
        .arg("-s")
        .arg(&path)
        .arg(base)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    // wrk's own CPU, read from /proc while it runs (the last reading before it exits).
    let pid = child.id().unwrap_or(0);
    let mut wrk_ticks = 0;
    let output = loop {
        if let Some(ticks) = report::process_ticks(&pid.to_string()) {
            wrk_ticks = ticks;
        }
        tokio::select! {
            status = child.wait() => { status?; break child.wait_with_output().await?; }
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    };
    let _ = std::fs::remove_file(&path);
    let busy = report::machine_busy_ticks().saturating_sub(machine);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|line| line.starts_with('{'));
    let Some(figures) = line.and_then(|line| serde_json::from_str::<Value>(line).ok()) else {
        anyhow::bail!("wrk printed no figures: {stdout} {}", String::from_utf8_lossy(&output.stderr));
    };
    let number = |field: &str| figures[field].as_f64().unwrap_or(0.0);
    let elapsed = number("micros") / 1e6;
    let failed = number("failed") as u64;
    let count = (number("requests") as u64).saturating_sub(failed);
    let ms = |field: &str| (number(field) / 10.0).round() / 100.0;
    Ok(json!({
        "scenario": name,
        "unit": "messages",
        "driver": "wrk",
        "count": count,
        "errors": failed,
        "seconds": elapsed,
        "per_second": count as f64 / elapsed.max(1e-9),
        "p50_ms": ms("p50_us"),
        "p99_ms": ms("p99_us"),
        "p999_ms": ms("p999_us"),
        "load_cpu_cores": ((wrk_ticks as f64 / 100.0) / elapsed.max(1e-9) * 100.0).round() / 100.0,
        "machine_cpu_ms_per_request": report::cpu_ms_per_request(busy, count as usize),
    }))
}
