//! The `msgline` binary: parses the command line and hands over to the library.

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use msgline::{Application, Config, admin, app::shutdown_signal, db::Db, telemetry};

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
    /// Operator commands on the same database as `serve`.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
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
        #[arg(long)]
        bridge_url: String,
        #[arg(long)]
        bridge_token: Option<String>,
    },
    /// List every line with its capabilities.
    List,
}

fn main() -> ExitCode {
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
            telemetry::init(&config);
            let app = Application::build(config).await?;
            app.run_until_stopped(shutdown_signal()).await
        }
        Command::Migrate => {
            let db = Db::connect(&config.database_url).await?;
            let applied = db.migrate().await?;
            print_json(&serde_json::json!({"applied": applied}))
        }
        Command::Admin { command } => {
            let db = Db::connect(&config.database_url).await?;
            db.migrate().await?;
            let answer = match command {
                AdminCommand::Org { command: OrgCommand::Create { name } } => admin::create_org(&db, &name).await?,
                AdminCommand::Key { command: KeyCommand::Create { org, scopes, line, name } } => {
                    admin::create_key(&db, &org, &scopes, line.as_deref(), name.as_deref()).await?
                }
                AdminCommand::Line {
                    command: LineCommand::Create { e164, kind, org, bridge_url, bridge_token },
                } => admin::create_line(&db, &e164, &kind, org.as_deref(), &bridge_url, bridge_token.as_deref()).await?,
                AdminCommand::Line { command: LineCommand::List } => admin::list_lines(&db).await?,
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
