//! What a bench run reports: the load generator's own CPU, and the table printed at the end.

use std::time::Instant;

use serde_json::Value;

/// The load generator's own CPU over a scenario (this process: its HTTP clients and their
/// bookkeeping), so that a figure limited by the generator is seen as such.
pub(super) struct LoadCpu {
    ticks: u64,
    at: Instant,
}

impl LoadCpu {
    pub(super) fn start() -> Self {
        Self { ticks: Self::ticks(), at: Instant::now() }
    }

    /// User and system time of this process, in clock ticks (100 per second on Linux).
    fn ticks() -> u64 {
        process_ticks("self").unwrap_or_default()
    }

    /// Cores the generator kept busy on average since `start`.
    pub(super) fn cores(&self) -> f64 {
        let seconds = (Self::ticks().saturating_sub(self.ticks)) as f64 / 100.0;
        (seconds / self.at.elapsed().as_secs_f64().max(1e-9) * 100.0).round() / 100.0
    }
}

/// User and system time of a process (`self`, or a pid), in clock ticks; `None` once it is gone.
pub(super) fn process_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest)?;
    Some(after.split_whitespace().skip(11).take(2).filter_map(|f| f.parse::<u64>().ok()).sum())
}

/// The whole machine's busy CPU (every process: the load generator, the server or Kannel, the
/// simulated line, the database), in clock ticks from /proc/stat: user, nice, system, irq and
/// softirq; idle, I/O wait and time stolen by a hypervisor are not counted.
pub(super) fn machine_busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    [0, 1, 2, 5, 6].iter().filter_map(|&i| fields.get(i)).sum()
}

/// Milliseconds of the machine's CPU per request, from busy ticks (100 per second) over a run.
pub(super) fn cpu_ms_per_request(ticks: u64, requests: usize) -> Option<f64> {
    (requests > 0).then(|| (ticks as f64 * 10.0 / requests as f64 * 1000.0).round() / 1000.0)
}

pub(super) fn print_table(report: &Value) {
    println!(
        "database: {}   durability: {}   connections: {}   keys: {}",
        report["database"].as_str().unwrap_or_default(),
        report["durability"].as_str().unwrap_or_default(),
        report["connections"],
        report["api_keys"]
    );
    println!("rate limits: {}", report["rate_limits"].as_str().unwrap_or_default());
    println!(
        "{:<14} {:>10} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "scenario", "count", "errors", "per second", "p50 ms", "p99 ms", "p99.9 ms", "load CPU", "CPU ms/r", "RSS MiB"
    );
    for result in report["results"].as_array().into_iter().flatten() {
        if let Some(skipped) = result["skipped"].as_str() {
            println!("{:<14} skipped: {skipped}", result["scenario"].as_str().unwrap_or_default());
            continue;
        }
        println!(
            "{:<14} {:>10} {:>8} {:>12.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            result["scenario"].as_str().unwrap_or_default(),
            result["count"].as_u64().unwrap_or(0),
            result["errors"].as_u64().unwrap_or(0),
            result["per_second"].as_f64().unwrap_or(0.0),
            ms(&result["p50_ms"]),
            ms(&result["p99_ms"]),
            ms(&result["p999_ms"]),
            result["load_cpu_cores"].as_f64().map(|c| format!("{c:.2}")).unwrap_or_else(|| "-".into()),
            result["machine_cpu_ms_per_request"].as_f64().map(|c| format!("{c:.3}")).unwrap_or_else(|| "-".into()),
            result["server_rss_peak_mib"].as_f64().map(|m| format!("{m:.1}")).unwrap_or_else(|| "-".into()),
        );
    }
    for soak in report["results"].as_array().into_iter().flatten().filter(|r| r["scenario"] == "soak") {
        print_soak(soak);
    }
    for waiting in report["results"].as_array().into_iter().flatten().filter(|r| r["scenario"] == "waiting") {
        let percent = |field: &str| waiting[field].as_f64().map(|p| format!("{p:.2} %")).unwrap_or_else(|| "-".into());
        println!(
            "waiting: {} messages on a line's budget; the idle server's CPU over {} s: {} of a core ({} before any waited)",
            waiting["count"],
            waiting["measured_seconds"],
            percent("server_cpu_percent_of_a_core"),
            percent("server_cpu_percent_of_a_core_before")
        );
    }
    if let Some(ratio) = report["send_to_kannel"].as_f64() {
        println!("send / kannel: {ratio:.2}x   (send: {})", report["send_request"].as_str().unwrap_or_default());
    }
    for (field, what) in
        [("wrk_send_to_kannel", "wrk-send / wrk-kannel"), ("wrk_send_new_to_kannel", "wrk-send-new / wrk-kannel")]
    {
        if let Some(ratio) = report[field].as_f64() {
            println!("{what}: {ratio:.2}x   (wrk driving both)");
        }
    }
    if let Some(ratio) = report["kannel_line_to_kannel"].as_f64() {
        println!("kannel-line / kannel: {ratio:.2}x   (msgline's sends through Kannel to its fake SMSC)");
    }
    let rss = &report["server_rss_mib"];
    println!(
        "server RSS: idle {:.1} MiB, peak {:.1} MiB",
        rss["idle"].as_f64().unwrap_or(0.0),
        rss["peak"].as_f64().unwrap_or(0.0)
    );
}

/// The soak's windows and what its webhook receiver got.
fn print_soak(soak: &Value) {
    if let Some(measured) = soak["measured"].as_object() {
        let send = &measured["send"];
        println!(
            "soak: closed-loop send {:.0}/s (p99 {} ms), end to end {:.0}/s; soak target {:.0}/s",
            send["per_second"].as_f64().unwrap_or(0.0),
            ms(&send["p99_ms"]),
            measured["end_to_end_per_second"].as_f64().unwrap_or(0.0),
            soak["target_per_second"].as_f64().unwrap_or(0.0)
        );
    }
    println!("{:>8} {:>8} {:>7} {:>9} {:>9} {:>9}", "from s", "sends", "errors", "p50 ms", "p99 ms", "RSS MiB");
    for window in soak["windows"].as_array().into_iter().flatten() {
        println!(
            "{:>8.0} {:>8} {:>7} {:>9} {:>9} {:>9.1}",
            window["from_s"].as_f64().unwrap_or(0.0),
            window["sends"],
            window["errors"],
            ms(&window["p50_ms"]),
            ms(&window["p99_ms"]),
            window["server_rss_mib"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "soak messages: {} not yet delivered when the sends stopped, {} after the drain",
        soak["messages_undelivered_at_end"], soak["messages_undelivered"]
    );
    let hooks = &soak["webhooks"];
    println!(
        "soak webhooks: {} events, {} delivered; calls refused {}, accepted {}; {} deliveries pending at the end, \
         drained in {:.0} s ({} left, {} failed)",
        hooks["events"],
        hooks["events_delivered"],
        hooks["calls_refused"],
        hooks["calls_accepted"],
        hooks["deliveries_pending_at_end"],
        hooks["drain_seconds"].as_f64().unwrap_or(0.0),
        hooks["deliveries_left"],
        hooks["deliveries_failed"]
    );
}

fn ms(value: &Value) -> String {
    value.as_f64().map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// `--check` (the smoke run): every scenario ran, counted and had no errors, and the scenarios
/// with checks of their own pass them.
pub(crate) fn check(report: &Value) -> anyhow::Result<()> {
    for result in report["results"].as_array().into_iter().flatten() {
        let name = result["scenario"].as_str().unwrap_or_default();
        if result.get("skipped").is_some() {
            continue;
        }
        anyhow::ensure!(result["count"].as_u64().unwrap_or(0) > 0, "bench scenario {name} counted nothing");
        anyhow::ensure!(result["errors"].as_u64().unwrap_or(0) == 0, "bench scenario {name} had errors");
        match name {
            "soak" => crate::soak::check(result)?,
            "feed" => crate::feed::check(result)?,
            // An event written just before the count began may arrive too.
            "lag" | "webhooks" => anyhow::ensure!(
                result["count"].as_u64() >= result["expected"].as_u64(),
                "bench scenario {name}: {} of {} events arrived",
                result["count"],
                result["expected"]
            ),
            "grown-send" => anyhow::ensure!(result["to_empty"].is_number(), "bench scenario grown-send has no ratio"),
            _ => {}
        }
    }
    println!("bench check: every scenario ran and counted");
    Ok(())
}
