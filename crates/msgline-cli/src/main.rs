//! The `msgline` binary: parses the command line and hands over to the server library
//! (`msgline`) or to a tool's crate (`msgline-sim`, `msgline-bench`, `msgline-demo`).

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use msgline::{Application, Config, Db, admin, shutdown_signal, telemetry};
use msgline_sim::SimConfig;

/// jemalloc rather than the system's allocator (feature `jemalloc`, on in production builds):
/// under a send load glibc's malloc and free took about a fifth of the server's CPU
/// (BENCHMARKS.md).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts: one arena (not one per CPU, which kept a partly
/// used run of every size class in each); freed pages handed back to the system after 300 ms by
/// a background thread, so that memory falls back soon after a burst; and each thread keeps
/// freed blocks of at most 4 KiB for itself (not 32 KiB), and half as many of each size as by
/// default. The larger blocks (a page of messages, its JSON) held by each of the server's
/// threads raised its peak memory by about 7 MiB in the bench's full run on SQLite; the arena,
/// thread caches and decay together took about 3.5 MiB off the peak of a `send` run, with no
/// change in CPU per request (BENCHMARKS.md).
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8] = b"narenas:1,background_thread:true,dirty_decay_ms:300,muzzy_decay_ms:0,\
tcache_max:4096,lg_tcache_nslots_mul:-1\0";

/// With the system's allocator (the quick `release` build), allocations of 1 MiB and more are
/// mapped on their own and handed back to the system when freed. By default glibc raises that
/// threshold to the size of each such block freed, so that the next ones came from the heap of
/// the thread that asked and stayed there: each console sign-in left Argon2's 19 MiB with the
/// thread that hashed it (60 sign-ins took the server from 33 to 715 MiB).
#[cfg(all(not(feature = "jemalloc"), target_os = "linux", target_env = "gnu"))]
fn hand_back_large_blocks() {
    // SAFETY: mallopt only changes the allocator's settings; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(not(all(not(feature = "jemalloc"), target_os = "linux", target_env = "gnu")))]
fn hand_back_large_blocks() {}

#[derive(Parser)]
#[command(name = "msgline", version, about = "Self-hostable messaging API for SMS and iMessage")]
struct Cli {
    /// A TOML file with the same keys as the MSGLINE_* variables (lowercase, without the prefix).
    #[arg(long, global = true, env = "MSGLINE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API server and its background workers.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// A zero-setup trial: the server on a SQLite file plus a simulated dedicated line and a
    /// simulated shared line, a demo organisation and ready curl commands.
    Demo(DemoArgs),
    /// A simulated phone line (a complete device bridge) in its own process.
    Sim(SimArgs),
    /// A load generator: starts a server on a fresh database and measures it.
    Bench(BenchCli),
    /// An MCP server on stdio: msgline's API as tools for an AI assistant, acting with the API key
    /// in MSGLINE_KEY against the server at MSGLINE_URL.
    Mcp,
    /// Print the OpenAPI 3.1 document of the HTTP API (also served at GET /api/v1/openapi.json).
    Openapi,
    /// Operator commands on the same database as `serve`.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(clap::Args)]
struct DemoArgs {
    /// The SQLite file the demo uses; it is started afresh each time.
    #[arg(long, default_value = "msgline-demo.db")]
    database: PathBuf,
    /// Where the simulated dedicated line (with group support) listens.
    #[arg(long, default_value = "127.0.0.1:9090")]
    dedicated_sim: String,
    /// Where the simulated shared line listens.
    #[arg(long, default_value = "127.0.0.1:9091")]
    shared_sim: String,
}

#[derive(clap::Args)]
struct BenchCli {
    /// sqlite, postgres (127.0.0.1:5432 as postgres), or a postgres:// admin URL.
    #[arg(long, default_value = "sqlite")]
    database: String,
    /// Comma-separated: floor, kannel, send, e2e, wrk-kannel, wrk-send, wrk-send-new, kannel-line,
    /// webhooks, lag, read, console, or all; soak, scheduled, waiting, feed, grown and retention
    /// only when named (soak: `--seconds` long, paced, with a webhook receiver that refuses half
    /// its calls; scheduled: `send` before and beside `--read-rows` scheduled messages, and a
    /// tenth as many coming due at once; grown: `send` and the reads before and after
    /// `--grown-rows` messages are stored; retention: `send` beside `--grown-rows` messages of the
    /// past year, then while the retention pass keeping one day deletes them).
    #[arg(long, default_value = "all")]
    scenarios: String,
    /// Concurrent connections.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per scenario.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// API keys the load is spread over.
    #[arg(long, default_value_t = 16)]
    keys: usize,
    /// Messages in the table the read and console scenarios read from (and the scheduled
    /// messages of `scheduled`).
    #[arg(long, default_value_t = 1_000_000)]
    read_rows: i64,
    /// Messages the `grown` and `retention` scenarios store (over a hundredth as many
    /// conversations).
    #[arg(long, default_value_t = 10_000_000)]
    grown_rows: i64,
    /// Where to write the JSON report.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Exit non-zero unless every scenario ran, counted and had no errors.
    #[arg(long)]
    check: bool,
    /// Keep the bench server's rate limits in this Redis (redis://127.0.0.1:6379).
    #[arg(long)]
    redis: Option<String>,
    /// The soak's sends per second (default: 80 % of the closed-loop send rate it measures
    /// first), and the `lag` scenario's (default 1,000).
    #[arg(long)]
    rate: Option<f64>,
    /// Run the whole bench this many times, each in its own process, and print every run's
    /// figures in one table at the end (`--out` then holds every report).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Another msgline binary (an earlier build) to alternate with, run for run: this, BIN,
    /// this, BIN, ... (`--repeat` times each).
    #[arg(long, value_name = "BIN")]
    alternate: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SimArgs {
    /// Where the bridge serves (port 0 picks a free one; the address is printed as JSON).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: String,
    /// The line's own number.
    #[arg(long, default_value = "+12015550100")]
    e164: String,
    /// Bearer token the service must present.
    #[arg(long)]
    token: Option<String>,
    /// Where to report status changes and inbound messages.
    #[arg(long)]
    callback_url: Option<String>,
    /// The line's bridge_secret, presented on callbacks.
    #[arg(long)]
    callback_secret: Option<String>,
    /// The device has no native group support.
    #[arg(long)]
    no_groups: bool,
    /// The device cannot send files over SMS (MMS); over iMessage it still can.
    #[arg(long)]
    no_mms: bool,
    /// Comma-separated numbers that are not reachable over iMessage.
    #[arg(long, value_delimiter = ',')]
    sms_only: Vec<String>,
    /// How the line answers sends.
    #[arg(long, value_enum, default_value = "accept")]
    mode: msgline_sim::Mode,
    /// Seed for the flaky mode's choices.
    #[arg(long)]
    seed: Option<u64>,
    /// Progress delivered messages on to read.
    #[arg(long)]
    read_receipts: bool,
    /// Milliseconds between the steps of a message's progress.
    #[arg(long, default_value_t = 20)]
    step_ms: u64,
    /// In timeout mode, milliseconds before the outcome is reported by callback.
    #[arg(long, default_value_t = 30_000)]
    late_report_ms: u64,
    /// A file where the line keeps what it was handed, so that a restarted simulator remembers
    /// it (as a phone keeps its messages when it reboots).
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Milliseconds the line takes to answer a send or a group change, after it has taken it.
    #[arg(long, default_value_t = 0)]
    answer_ms: u64,
    /// Most sends one `POST /v1/messages/batch` call may carry; 0: the line takes one message
    /// a call, as a bridge that predates batches does.
    #[arg(long, default_value_t = 100)]
    batch: u16,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Organisations.
    Org {
        #[command(subcommand)]
        command: OrgCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Phone lines and their bridges.
    Line {
        #[command(subcommand)]
        command: LineCommand,
    },
    /// The people who sign in to the console.
    Staff {
        #[command(subcommand)]
        command: StaffCommand,
    },
    /// Copies the database, while the server runs, into one file.
    Backup {
        /// The file to write (replaced once the copy is complete).
        #[arg(long)]
        to: std::path::PathBuf,
    },
    /// Loads a backup into an empty database (one holding any row is refused).
    Restore {
        /// The file `admin backup` wrote.
        #[arg(long)]
        from: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum StaffCommand {
    /// Add a staff member; prints a one-time sign-in link (a day) where they set a password.
    Create {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
        /// owner (everything) or member (conversations, sends, contacts, groups, agents).
        #[arg(long, default_value = "member")]
        role: String,
        /// Read the password from standard input instead of sending a sign-in link.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List an organisation's staff.
    List {
        #[arg(long)]
        org: String,
    },
    /// Remove a staff member; their sessions end at once.
    Remove {
        #[arg(long)]
        id: String,
    },
}

#[derive(Subcommand)]
enum OrgCommand {
    /// Create an organisation and a key with every scope.
    Create {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create an API key.
    Create {
        #[arg(long)]
        org: String,
        /// Comma-separated scopes, e.g. messaging_send,messaging_read.
        #[arg(long)]
        scopes: String,
        /// Bind the key to one line.
        #[arg(long)]
        line: Option<String>,
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Subcommand)]
// Parsed once per run: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum LineCommand {
    /// Register a line and its bridge.
    Create {
        #[arg(long)]
        e164: String,
        /// dedicated (one organisation) or shared (every organisation).
        #[arg(long)]
        kind: String,
        #[arg(long)]
        org: Option<String>,
        /// The device's address: a `msgline` bridge, a BlueBubbles Server, an Android gateway.
        #[arg(long, required_unless_present = "dial_in")]
        bridge_url: Option<String>,
        /// An Android phone that calls msgline (SMS Gateway for Android's private-server mode)
        /// instead of being called: prints the address and the registration token to give it.
        #[arg(long)]
        dial_in: bool,
        /// The token msgline presents to a `msgline` bridge.
        #[arg(long)]
        bridge_token: Option<String>,
        /// msgline (the bridge protocol, default), bluebubbles, android-gateway or kannel.
        #[arg(long, default_value = "msgline")]
        bridge_kind: String,
        /// The Android gateway's username, or Kannel's sendsms-user.
        #[arg(long)]
        bridge_username: Option<String>,
        /// A Kannel line's smsc-id (kannel.conf) that sends its messages; else Kannel routes.
        #[arg(long)]
        kannel_smsc: Option<String>,
        /// The BlueBubbles Server password, the Android gateway's, or Kannel's sendsms-user's.
        #[arg(long, env = "MSGLINE_BRIDGE_PASSWORD", hide_env_values = true)]
        bridge_password: Option<String>,
    },
    /// List every line with its capabilities, policy and health.
    List,
    /// Change a line's sending policy (JSON as `PATCH /lines/{id}` takes it), or pause or
    /// resume it; shared lines too.
    Update {
        #[arg(long)]
        id: String,
        /// The limits to change, such as '{"max_per_day": 500, "min_gap_ms": null}'.
        #[arg(long)]
        policy: Option<String>,
        /// Stop the line's sends until it is resumed.
        #[arg(long)]
        pause: bool,
        /// Let a paused, flagged or offline line send again.
        #[arg(long)]
        resume: bool,
    },
}

/// Turns off SQLite's memory statistics before anything opens a database (SQLite reads its
/// configuration once, when it starts). With them on, every allocation SQLite makes takes a lock
/// shared by all its connections, to count bytes nothing here reads. In the binary, not the
/// library, which has no `unsafe`.
fn configure_sqlite() {
    // SAFETY: called before any thread or connection exists; `sqlite3_config` only stores the
    // setting (after SQLite has started it would return SQLITE_MISUSE and change nothing).
    unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::os::raw::c_int);
    }
}

fn main() -> ExitCode {
    hand_back_large_blocks();
    configure_sqlite();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fail(error.into()),
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(error),
    }
}

fn fail(error: anyhow::Error) -> ExitCode {
    let text = format!("{error:#}").replace('\n', " ");
    eprintln!("error: {text}");
    ExitCode::FAILURE
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve => {
            let telemetry = telemetry::init(&config)?;
            let served = async { Application::build(config).await?.run_until_stopped(shutdown_signal()).await };
            let served = served.await;
            telemetry.stop().await;
            served
        }
        Command::Demo(args) => {
            let _logs = telemetry::init(&Config {
                log: std::env::var("MSGLINE_LOG").unwrap_or_else(|_| "warn".into()),
                otlp_endpoint: None,
                ..config.clone()
            })?;
            msgline_demo::run(config, &args.database, &args.dedicated_sim, &args.shared_sim).await
        }
        Command::Openapi => {
            let document = serde_json::to_string_pretty(&msgline::openapi_document())?;
            println!("{document}");
            Ok(())
        }
        Command::Mcp => {
            // Logs go to stderr: stdout carries the protocol.
            let key =
                std::env::var("MSGLINE_KEY").map_err(|_| anyhow::anyhow!("MSGLINE_KEY (an API key) is not set"))?;
            let url = std::env::var("MSGLINE_URL").unwrap_or_else(|_| format!("http://{}", config.listen));
            msgline::run_mcp(&url, &key).await
        }
        Command::Sim(args) => {
            let _logs = telemetry::init(&Config { otlp_endpoint: None, ..config.clone() })?;
            let sim = SimConfig {
                listen: args.listen,
                e164: args.e164,
                token: args.token,
                callback_url: args.callback_url,
                callback_secret: args.callback_secret,
                groups: !args.no_groups,
                sms_only: args.sms_only,
                mode: args.mode,
                seed: args.seed,
                read_receipts: args.read_receipts,
                step: Duration::from_millis(args.step_ms),
                late_report: Duration::from_millis(args.late_report_ms),
                journal: args.journal,
                answer_delay: Duration::from_millis(args.answer_ms),
                mms: !args.no_mms,
                batch: args.batch,
            };
            msgline_sim::run(sim).await
        }
        Command::Bench(args) if args.repeat > 1 || args.alternate.is_some() => {
            msgline_bench::series::run(series_args(), args.repeat, args.alternate, args.out).await
        }
        Command::Bench(args) => {
            let scenarios = if args.scenarios == "all" {
                msgline_bench::SCENARIOS.iter().map(|s| s.to_string()).collect()
            } else {
                args.scenarios.split(',').map(|s| s.trim().to_string()).collect()
            };
            msgline_bench::run(msgline_bench::BenchArgs {
                database: args.database,
                scenarios,
                connections: args.connections,
                seconds: args.seconds,
                keys: args.keys,
                read_rows: args.read_rows,
                grown_rows: args.grown_rows,
                out: args.out,
                check: args.check,
                redis: args.redis,
                rate: args.rate,
            })
            .await
        }
        Command::Migrate => {
            let db = Db::connect_for_command(&config.database_url).await?;
            let applied = db.migrate().await?;
            print_json(&serde_json::json!({"applied": applied}))
        }
        Command::Admin { command: AdminCommand::Backup { to } } => {
            print_json(&admin::backup(&config.database_url, &to).await?)
        }
        Command::Admin { command: AdminCommand::Restore { from } } => {
            print_json(&admin::restore(&config.database_url, &from).await?)
        }
        Command::Admin { command } => {
            let db = Db::connect_for_command(&config.database_url).await?;
            db.migrate().await?;
            let answer = match command {
                AdminCommand::Org { command: OrgCommand::Create { name } } => admin::create_org(&db, &name).await?,
                AdminCommand::Key { command: KeyCommand::Create { org, scopes, line, name } } => {
                    admin::create_key(&db, &org, &scopes, line.as_deref(), name.as_deref()).await?
                }
                AdminCommand::Line {
                    command:
                        LineCommand::Create {
                            e164,
                            kind,
                            org,
                            bridge_url,
                            bridge_token,
                            bridge_kind,
                            bridge_username,
                            bridge_password,
                            kannel_smsc,
                            dial_in,
                        },
                } => {
                    let setup = admin::LineSetup {
                        e164: &e164,
                        kind: &kind,
                        org_id: org.as_deref(),
                        bridge_url: bridge_url.as_deref().unwrap_or_default(),
                        bridge_token: bridge_token.as_deref(),
                        bridge_kind: &bridge_kind,
                        bridge_username: bridge_username.as_deref(),
                        bridge_password: bridge_password.as_deref(),
                        kannel_smsc: kannel_smsc.as_deref(),
                        dial_in,
                    };
                    let mut answer = admin::create_line(&db, setup).await?;
                    admin::connect_line(&db, &config, &mut answer).await?;
                    answer
                }
                AdminCommand::Line { command: LineCommand::List } => admin::list_lines(&db).await?,
                AdminCommand::Line { command: LineCommand::Update { id, policy, pause, resume } } => {
                    admin::update_line(&db, &id, policy.as_deref(), pause, resume).await?
                }
                AdminCommand::Staff { command: StaffCommand::Create { org, email, role, password_stdin } } => {
                    let password = if password_stdin {
                        let mut line = String::new();
                        std::io::stdin().read_line(&mut line)?;
                        Some(line.trim_end_matches(['\r', '\n']).to_string())
                    } else {
                        None
                    };
                    admin::create_staff(&db, &config, &org, &email, &role, password.as_deref()).await?
                }
                AdminCommand::Staff { command: StaffCommand::List { org } } => admin::list_staff(&db, &org).await?,
                AdminCommand::Staff { command: StaffCommand::Remove { id } } => admin::remove_staff(&db, &id).await?,
                AdminCommand::Backup { .. } | AdminCommand::Restore { .. } => {
                    unreachable!("backup and restore open the database themselves, above")
                }
            };
            db.close().await;
            print_json(&answer)
        }
    }
}

fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// `bench`'s own arguments as given, without the series' `--repeat`, `--alternate` and `--out`
/// (each run of the series gets its own `--out`).
fn series_args() -> Vec<String> {
    let mut args = std::env::args().skip_while(|a| a != "bench").skip(1);
    let mut kept = Vec::new();
    while let Some(arg) = args.next() {
        let name = arg.split('=').next().unwrap_or_default();
        if matches!(name, "--repeat" | "--alternate" | "--out") {
            if !arg.contains('=') {
                args.next();
            }
            continue;
        }
        kept.push(arg);
    }
    kept
}
