//! `msgline demo`: the server on a fresh SQLite file, a simulated dedicated line (with group
//! support) and a simulated shared line on real ports, a demo organisation and its key, an owner
//! with a link to the console, and curl commands to try.

use std::path::Path;

use msgline::{Application, Config, admin, shutdown_signal};
use msgline_sim::SimConfig;

const DEDICATED_E164: &str = "+12015550100";
const SHARED_E164: &str = "+12015550199";
const FRIEND: &str = "+12015550123";
const DEMO_OWNER: &str = "owner@demo.example";

pub async fn run(mut config: Config, database: &Path, dedicated_sim: &str, shared_sim: &str) -> anyhow::Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", database.display()));
    }
    config.database_url = format!("sqlite://{}", database.display());
    config.allow_private_targets = true;
    let app = Application::build(config.clone()).await?;
    let base = format!("http://127.0.0.1:{}", app.port());
    let db = app.state().db().clone();

    let org = admin::create_org(&db, "Demo").await?;
    let org_id = org["org_id"].as_str().unwrap_or_default().to_string();
    let key = org["api_key"].as_str().unwrap_or_default().to_string();
    let callback_url = format!("{base}/api/v1/messaging/bridge/events");
    for (e164, listen, shared) in [(DEDICATED_E164, dedicated_sim, false), (SHARED_E164, shared_sim, true)] {
        let token = admin::random_secret("sim_");
        let kind = if shared { "shared" } else { "dedicated" };
        let owner = (!shared).then_some(org_id.as_str());
        let line = admin::create_line(
            &db,
            admin::LineSetup::msgline(e164, kind, owner, &format!("http://{listen}"), Some(&token)),
        )
        .await?;
        let sim = SimConfig {
            listen: listen.to_string(),
            e164: e164.to_string(),
            token: Some(token),
            callback_url: Some(callback_url.clone()),
            callback_secret: line["bridge_secret"].as_str().map(str::to_string),
            groups: !shared,
            ..SimConfig::default()
        };
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot start the simulated line on {listen}: {e}"))?;
        let router = msgline_sim::router(sim)?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
    }

    // An owner for the console, who sets a password through a one-time link.
    let owner = admin::create_staff(&db, &config, &org_id, DEMO_OWNER, "owner", None).await?;
    let token = owner["sign_in_url"].as_str().and_then(|url| url.split_once("token=")).map_or("", |(_, t)| t);
    let sign_in = format!("{base}/console/welcome?token={token}");

    println!(
        r#"msgline demo is running at {base}
  a simulated dedicated line {DEDICATED_E164} (bridge http://{dedicated_sim}, groups on)
  a simulated shared line    {SHARED_E164} (bridge http://{shared_sim})
  database: {db_file} (started afresh)

The console, for the demo owner {DEMO_OWNER}: open this link once (a day) to set a password:
  {sign_in}
then sign in at {base}/console

Demo organisation {org_id}, API key (shown once):
  export MSGLINE_KEY={key}

Try:
  curl -s {base}/api/v1/messaging/lines -H "Authorization: Bearer $MSGLINE_KEY"

  curl -s {base}/api/v1/messaging/messages -H "Authorization: Bearer $MSGLINE_KEY" \
    -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-1' \
    -d '{{"to": "{FRIEND}", "from": "{DEDICATED_E164}", "body": "Hello from msgline"}}'

  curl -s "{base}/api/v1/messaging/messages?limit=5" -H "Authorization: Bearer $MSGLINE_KEY"

  # what the simulated phone sent, and a reply from the friend:
  curl -s http://{dedicated_sim}/control/sent
  curl -s http://{dedicated_sim}/control/inbound -H 'Content-Type: application/json' \
    -d '{{"from": "{FRIEND}", "body": "Hi back"}}'

Stop with Ctrl-C."#,
        db_file = database.display(),
    );
    app.run_until_stopped(shutdown_signal()).await
}
