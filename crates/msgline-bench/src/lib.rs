//! `msgline bench`: a load generator. It starts `msgline serve` (this same binary) on a fresh
//! database with a simulated line, creates an organisation and many API keys, drives the server
//! over HTTP and reports throughput, latency percentiles and the server's memory, beside the
//! floor: the same load against a route that does one durable single-row insert and nothing else.

use std::{
    path::PathBuf,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sqlx::Row;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use msgline::{Backend, Db, admin, ids};

mod console;
mod feed;
mod grown;
mod kannel_line;
mod peer;
mod report;
mod retention;
mod scheduled;
mod send;
pub mod series;
mod soak;
mod storage;
mod waiting;
mod webhooks;
mod wrk;

use report::{LoadCpu, print_table};
use send::{reported_samples, scenario_e2e, scenario_send, sends_from};

#[derive(Debug, Clone)]
pub struct BenchArgs {
    /// `sqlite`, `postgres`, or a `postgres://` admin URL to create the bench database from.
    pub database: String,
    pub scenarios: Vec<String>,
    pub connections: usize,
    pub seconds: f64,
    pub keys: usize,
    pub read_rows: i64,
    /// Messages the `grown` and `retention` scenarios store.
    pub grown_rows: i64,
    pub out: Option<PathBuf>,
    /// Fail unless every scenario made progress without errors (the CI smoke run).
    pub check: bool,
    /// Keep the server's rate limits in this Redis (`MSGLINE_REDIS_URL`) instead of its memory.
    pub redis: Option<String>,
    /// The soak's send rate per second (default: 80 % of the closed-loop rate it measures).
    pub rate: Option<f64>,
}

/// The scenarios `all` runs; `soak` runs only when named (it is long: see [`soak`]).
pub const SCENARIOS: [&str; 12] = [
    "floor",
    "kannel",
    "send",
    "e2e",
    "wrk-kannel",
    "wrk-send",
    "wrk-send-new",
    "kannel-line",
    "webhooks",
    "lag",
    "read",
    "console",
];

/// Scenarios that run only when named: they take minutes, or change the server's state.
pub const ONLY_NAMED: [&str; 6] = ["soak", "scheduled", "waiting", "feed", "grown", "retention"];

/// Latency samples in microseconds, and how many requests failed.
#[derive(Default)]
struct Samples {
    micros: Vec<u64>,
    errors: u64,
    /// Cores the load generator kept busy while it made them (see [`drive`]).
    load_cpu_cores: Option<f64>,
    /// The whole machine's CPU time per successful request while they were made, in ms.
    machine_cpu_ms: Option<f64>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

fn summary(name: &str, mut samples: Samples, elapsed: Duration, unit: &str) -> Value {
    samples.micros.sort_unstable();
    let count = samples.micros.len();
    json!({
        "scenario": name,
        "unit": unit,
        "count": count,
        "errors": samples.errors,
        "seconds": elapsed.as_secs_f64(),
        "per_second": count as f64 / elapsed.as_secs_f64().max(1e-9),
        "p50_ms": percentile(&samples.micros, 50.0),
        "p99_ms": percentile(&samples.micros, 99.0),
        "p999_ms": percentile(&samples.micros, 99.9),
        "load_cpu_cores": samples.load_cpu_cores,
        "machine_cpu_ms_per_request": samples.machine_cpu_ms,
    })
}

/// A free loopback port below the kernel's ephemeral range (32768 and up on Linux), so that no
/// outgoing connection takes it between the moment it is chosen and the moment a server binds it.
fn free_port() -> anyhow::Result<u16> {
    free_ports(1)
}

/// The first of `count` consecutive free loopback ports, chosen at random between 20000 and
/// 32000: below the kernel's ephemeral range, where the load's own connections take their local
/// ports. A port one of them holds cannot be listened on.
fn free_ports(count: u16) -> anyhow::Result<u16> {
    for _ in 0..1000 {
        let base = rand::random_range(20_000..32_000);
        if (base..base + count).all(|port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()) {
            return Ok(base);
        }
    }
    anyhow::bail!("no {count} free ports in a row between 20000 and 32000")
}

/// Memory of a process from /proc: (current RSS, peak RSS) in MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Starts a new high-water mark of the process's RSS (VmHWM), so that the next reading of the peak
/// is one scenario's (`5` to `/proc/PID/clear_refs`; the bench runs the server as itself).
fn reset_rss_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

struct Harness {
    base: String,
    keys: Vec<String>,
    db: Db,
    server: Child,
    _sim: Child,
    line_e164: String,
    /// The simulated line's address and the organisation, for a scenario's own line.
    bridge_url: String,
    org_id: String,
    _dir: Option<tempfile_dir::Dir>,
    pg_cleanup: Option<(String, String)>,
}

/// A temporary directory removed on drop, without another dependency.
mod tempfile_dir {
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

async fn wait_ready(url: &str) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if client.get(url).send().await.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the server did not become ready at {url}")
}

impl Harness {
    async fn start(args: &BenchArgs) -> anyhow::Result<Harness> {
        let exe = std::env::current_exe()?;
        let (url, dir, pg_cleanup) = if args.database == "sqlite" {
            let dir = std::env::temp_dir().join(ids::new_id("msgline-bench"));
            std::fs::create_dir_all(&dir)?;
            (format!("sqlite://{}", dir.join("bench.db").display()), Some(tempfile_dir::Dir(dir)), None)
        } else {
            let admin_url = if args.database == "postgres" {
                "postgres://postgres@127.0.0.1:5432/postgres".to_string()
            } else {
                args.database.clone()
            };
            let name = format!("msgline_bench_{}", ids::new_id("db").trim_start_matches("db_"));
            let admin_db = Db::connect(&admin_url).await?;
            admin_db.write(async |conn| sqlx::query(&format!("CREATE DATABASE {name}")).execute(conn).await).await?;
            admin_db.close().await;
            let base = admin_url.rsplit_once('/').map(|(b, _)| b.to_string()).unwrap_or(admin_url.clone());
            (format!("{base}/{name}"), None, Some((admin_url, name)))
        };
        let db = Db::connect_for_command(&url).await?;
        db.migrate().await?;
        let org = admin::create_org(&db, "Bench").await?;
        let org_id = org["org_id"].as_str().unwrap_or_default().to_string();
        let mut keys = vec![org["api_key"].as_str().unwrap_or_default().to_string()];
        while keys.len() < args.keys.max(1) {
            let key = admin::create_key(
                &db,
                &org_id,
                "messaging_send,messaging_read,messaging_webhooks",
                None,
                Some("bench"),
            )
            .await?;
            keys.push(key["api_key"].as_str().unwrap_or_default().to_string());
        }
        let (port, sim_port) = (free_port()?, free_port()?);
        let line_e164 = "+12015550100".to_string();
        let bridge_url = format!("http://127.0.0.1:{sim_port}");
        let setup = admin::LineSetup::msgline(&line_e164, "dedicated", Some(&org_id), &bridge_url, None);
        let line = admin::create_line(&db, setup).await?;
        let mut sim = Command::new(&exe)
            .args(["sim", "--listen", &format!("127.0.0.1:{sim_port}"), "--e164", &line_e164, "--step-ms", "1"])
            .args(["--callback-url", &format!("http://127.0.0.1:{port}/api/v1/messaging/bridge/events")])
            .args(["--callback-secret", line["bridge_secret"].as_str().unwrap_or_default()])
            .env("MSGLINE_LOG", "warn")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = BufReader::new(sim.stdout.take().expect("piped")).lines();
        lines.next_line().await?;
        let mut server = Command::new(&exe);
        match &args.redis {
            Some(redis) => server.env("MSGLINE_REDIS_URL", redis),
            None => server.env_remove("MSGLINE_REDIS_URL"),
        };
        let server = server
            .arg("serve")
            .env("MSGLINE_DATABASE_URL", &url)
            .env("MSGLINE_LISTEN", format!("127.0.0.1:{port}"))
            .env("MSGLINE_RATE_LIMIT_PER_MINUTE", "100000000")
            .env("MSGLINE_SEND_RATE_LIMIT_PER_MINUTE", "100000000")
            .env("MSGLINE_ALLOW_PRIVATE_TARGETS", "true")
            .env("MSGLINE_BENCH_ROUTES", "true")
            .env("MSGLINE_LOG", "warn")
            .kill_on_drop(true)
            .spawn()?;
        let base = format!("http://127.0.0.1:{port}");
        wait_ready(&format!("{base}/readyz")).await?;
        Ok(Harness { base, keys, db, server, _sim: sim, line_e164, bridge_url, org_id, _dir: dir, pg_cleanup })
    }

    fn pid(&self) -> u32 {
        self.server.id().unwrap_or(0)
    }

    async fn stop(mut self) {
        let _ = self.server.kill().await;
        self.db.close().await;
        if let Some((admin_url, name)) = self.pg_cleanup.take()
            && let Ok(admin_db) = Db::connect(&admin_url).await
        {
            let _ = admin_db
                .write(async |conn| {
                    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(conn).await
                })
                .await;
            admin_db.close().await;
        }
    }

    async fn durability(&self) -> String {
        match self.db.backend() {
            Backend::Sqlite => "SQLite WAL, synchronous=NORMAL".into(),
            Backend::Postgres => {
                let value: String = self
                    .db
                    .write(async |conn| sqlx::query("SHOW synchronous_commit").fetch_one(conn).await)
                    .await
                    .and_then(|r| r.try_get(0))
                    .unwrap_or_else(|_| "?".into());
                format!("PostgreSQL synchronous_commit={value}")
            }
        }
    }
}

/// Runs `connections` loops for `seconds`, each making requests built by `request`.
async fn drive<F>(connections: usize, seconds: f64, request: F) -> (Samples, Duration)
where
    F: Fn(usize, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let counter = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let cpu = LoadCpu::start();
    let machine = report::machine_busy_ticks();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..connections {
        let request = request.clone();
        let counter = counter.clone();
        tasks.spawn(async move {
            let mut samples = Samples::default();
            while Instant::now() < deadline {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let begun = Instant::now();
                match request(worker, n).send().await {
                    Ok(response) if response.status().is_success() => {
                        let _ = response.bytes().await;
                        samples.micros.push(begun.elapsed().as_micros() as u64);
                    }
                    _ => samples.errors += 1,
                }
            }
            samples
        });
    }
    let mut all = Samples::default();
    while let Some(Ok(samples)) = tasks.join_next().await {
        all.micros.extend(samples.micros);
        all.errors += samples.errors;
    }
    all.load_cpu_cores = Some(cpu.cores());
    all.machine_cpu_ms =
        report::cpu_ms_per_request(report::machine_busy_ticks().saturating_sub(machine), all.micros.len());
    (all, started.elapsed())
}

fn client(connections: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("HTTP client builds")
}

/// Recipients cycle through a fixed set, as a real sender's customers do.
fn recipient(n: u64) -> String {
    format!("+1201555{:04}", 1000 + n % 5000)
}

async fn scenario_floor(h: &Harness, args: &BenchArgs) -> Value {
    let http = client(args.connections);
    let url = format!("{}/bench/floor", h.base);
    let (samples, elapsed) = drive(args.connections, args.seconds, move |_, _| http.post(&url)).await;
    summary("floor", samples, elapsed, "inserts")
}

async fn scenario_read(h: &Harness, args: &BenchArgs, seeded: &str) -> anyhow::Result<Value> {
    // A million messages over many conversations; the one read is an ordinary thread.
    let http = client(args.connections);
    let url = format!("{}/api/v1/messaging/messages?conversation_id={}&limit=50", h.base, seeded);
    let keys = h.keys.clone();
    let (samples, elapsed) =
        drive(args.connections, args.seconds, move |worker, _| http.get(&url).bearer_auth(&keys[worker % keys.len()]))
            .await;
    let mut result = summary("read", samples, elapsed, "requests");
    result["table_rows"] = json!(args.read_rows);
    Ok(result)
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    for scenario in &args.scenarios {
        anyhow::ensure!(
            SCENARIOS.contains(&scenario.as_str()) || ONLY_NAMED.contains(&scenario.as_str()),
            "unknown scenario {scenario}; scenarios: {}, {}",
            SCENARIOS.join(", "),
            ONLY_NAMED.join(", ")
        );
    }
    let harness = Harness::start(&args).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (idle_rss, _) = rss_mib(harness.pid());
    let mut results = Vec::new();
    let mut send_window = None;
    let mut peaks = Vec::new();
    // The read and console scenarios share one seeding.
    let mut seeded: Option<String> = None;
    for scenario in SCENARIOS.iter().chain(&ONLY_NAMED).filter(|s| args.scenarios.iter().any(|a| a == *s)) {
        eprintln!("running {scenario} ...");
        let (_, peak_before) = rss_mib(harness.pid());
        reset_rss_peak(harness.pid());
        let mut result = match *scenario {
            "floor" => scenario_floor(&harness, &args).await,
            "kannel" => peer::scenario(&args).await?,
            "send" => {
                let (result, from, to) = send::measured(&harness, &args).await?;
                send_window = Some((from, to));
                result
            }
            "e2e" => {
                let (from, to) = match send_window {
                    Some(window) => window,
                    None => {
                        let (_, from, to) = scenario_send(&harness, &args).await;
                        (from, to)
                    }
                };
                scenario_e2e(&harness, from, to).await?
            }
            "wrk-kannel" => wrk::scenario_kannel(&args).await?,
            "wrk-send" => wrk::scenario_send(&harness, &args, false).await?,
            "wrk-send-new" => wrk::scenario_send(&harness, &args, true).await?,
            "kannel-line" => kannel_line::scenario(&harness, &args).await?,
            "webhooks" => webhooks::scenario_webhooks(&harness, &args).await?,
            "lag" => webhooks::scenario_lag(&harness, &args).await?,
            "soak" => soak::scenario_soak(&harness, &args).await?,
            "scheduled" => {
                results.extend(scheduled::scenario(&harness, &args).await?);
                continue;
            }
            "waiting" => waiting::scenario(&harness, &args).await?,
            "feed" => feed::scenario(&harness, &args).await?,
            "grown" => {
                results.extend(grown::scenario(&harness, &args).await?);
                continue;
            }
            "retention" => {
                results.extend(retention::scenario(&harness, &args).await?);
                continue;
            }
            _ => {
                let conversation = match &seeded {
                    Some(conversation) => conversation.clone(),
                    None => seeded.insert(msgline::seed_bench_messages(&harness.db, args.read_rows).await?).clone(),
                };
                if *scenario == "console" {
                    results.extend(console::scenario(&harness, &args, &conversation, "console").await?);
                    continue;
                }
                scenario_read(&harness, &args, &conversation).await?
            }
        };
        // The server's own peak during this scenario (its seeding included, for read).
        let (_, scenario_peak) = rss_mib(harness.pid());
        result["server_rss_peak_mib"] = json!(scenario_peak);
        peaks.push(peak_before.max(scenario_peak));
        results.push(result);
    }
    let (rss_now, last_peak) = rss_mib(harness.pid());
    let peak_rss = peaks.into_iter().fold(last_peak, f64::max);
    let rate = |name: &str| {
        results
            .iter()
            .find(|r| r["scenario"] == name && r.get("skipped").is_none())
            .and_then(|r| r["per_second"].as_f64())
    };
    let ratio = |name: &str, peer: &str| match (rate(name), rate(peer)) {
        (Some(rate), Some(kannel)) if kannel > 0.0 => json!((rate / kannel * 100.0).round() / 100.0),
        _ => Value::Null,
    };
    let to_kannel = |name: &str| ratio(name, "kannel");
    let report = json!({
        "database": harness.db.backend().name(),
        "durability": harness.durability().await,
        "connections": args.connections,
        "seconds_per_scenario": args.seconds,
        "api_keys": harness.keys.len(),
        "rate_limits": "raised by env on the bench server (MSGLINE_RATE_LIMIT_PER_MINUTE and MSGLINE_SEND_RATE_LIMIT_PER_MINUTE = 100000000); load spread over the API keys",
        "rate_limits_kept_in": if args.redis.is_some() { "redis" } else { "memory" },
        "server_rss_mib": {"idle": idle_rss, "after": rss_now, "peak": peak_rss},
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)},
        "send_request": "POST /messages with an Idempotency-Key, from, no channel, to 5,000 recipients",
        "send_to_kannel": to_kannel("send"),
        "kannel_line_to_kannel": to_kannel("kannel-line"),
        "wrk_send_to_kannel": ratio("wrk-send", "wrk-kannel"),
        "wrk_send_new_to_kannel": ratio("wrk-send-new", "wrk-kannel"),
        "results": results,
    });
    print_table(&report);
    if let Some(path) = &args.out {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        eprintln!("wrote {}", path.display());
    }
    harness.stop().await;
    if args.check {
        report::check(&report)?;
    }
    Ok(())
}
