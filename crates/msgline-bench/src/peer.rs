//! The peer msgline's send rate is measured against: Kannel's HTTP `sendsms` (bearerbox with its
//! file store, which writes a message before the answer, and Kannel's fake SMSC), driven by the
//! same load generator with the same connections and duration, in the same run. Kannel is started
//! by `scripts/kannel` (which installs it from Debian packages when asked to by hand); when it is
//! not installed the scenario is skipped, never installed by the bench.

use std::{path::PathBuf, time::Duration};

use serde_json::{Value, json};
use tokio::process::Command;

use super::{BenchArgs, client, drive, recipient, summary};

/// Where `scripts/kannel` is: `MSGLINE_KANNEL_SCRIPT`, else `scripts/kannel` under the working
/// directory (the repository, as BENCHMARKS.md runs the bench).
pub(crate) fn script() -> PathBuf {
    std::env::var_os("MSGLINE_KANNEL_SCRIPT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("scripts/kannel"))
}

pub(crate) fn installed() -> bool {
    ["/usr/sbin/bearerbox", "/usr/bin/bearerbox"].iter().any(|p| std::path::Path::new(p).exists())
}

/// Kannel's `sendsms` under the bench's load, or why it was skipped.
/// A port for Kannel's sendsms whose next four are free too (the script takes its admin, box
/// and fake-SMSC ports from those). The script's check (a connection attempt) does not see a
/// port that one of the load's connections holds: bearerbox then failed to start in a few runs
/// out of thirty, before the ports came from below the ephemeral range.
fn kannel_port() -> anyhow::Result<u16> {
    super::free_ports(5)
}

/// Starts Kannel in a new directory on free ports: its directory and sendsms URL. A start that
/// fails (a port taken between the check and bearerbox's bind, say) is tried again, up to three
/// times, each with new ports; the script prints why on stderr.
pub(crate) async fn start(script: &std::path::Path) -> anyhow::Result<(super::tempfile_dir::Dir, String)> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let path = std::env::temp_dir().join(msgline::ids::new_id("kannel"));
        std::fs::create_dir_all(&path)?;
        let dir = super::tempfile_dir::Dir(path);
        let port = kannel_port()?;
        let started = Command::new("bash")
            .arg(script)
            .args(["start", "--dir", &dir.0.display().to_string(), "--port", &port.to_string()])
            .stderr(std::process::Stdio::inherit())
            .output()
            .await?;
        if started.status.success() {
            return Ok((dir, String::from_utf8(started.stdout)?.trim().to_string()));
        }
        anyhow::ensure!(attempt < 3, "scripts/kannel start failed three times (last: {})", started.status);
        eprintln!("scripts/kannel start failed ({}); trying again on other ports", started.status);
    }
}

pub async fn scenario(args: &BenchArgs) -> anyhow::Result<Value> {
    let script = script();
    if !installed() || !script.exists() {
        let why = format!(
            "Kannel is not installed (run `{} start --dir /tmp/k --port 13013` once to install it)",
            script.display()
        );
        return Ok(json!({"scenario": "kannel", "skipped": why}));
    }
    let (dir, url) = start(&script).await?;
    // Kannel's own start-up settles before the load begins, as msgline's does.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let http = client(args.connections);
    let (samples, elapsed) = drive(args.connections, args.seconds, move |_, n| {
        http.get(&url).query(&[
            ("to", recipient(n)),
            ("from", "+12015550100".to_string()),
            ("text", format!("bench message {n}")),
        ])
    })
    .await;
    let result = summary("kannel", samples, elapsed, "messages");
    stop(&script, &dir).await?;
    Ok(result)
}

/// Stops the Kannel that [`start`] started.
pub(crate) async fn stop(script: &std::path::Path, dir: &super::tempfile_dir::Dir) -> anyhow::Result<()> {
    let stopped =
        Command::new("bash").arg(script).args(["stop", "--dir", &dir.0.display().to_string()]).status().await?;
    if !stopped.success() {
        eprintln!("scripts/kannel stop failed; processes may be left in {}", dir.0.display());
    }
    Ok(())
}
