//! The `console` scenario: the console's pages over the `read` scenario's messages.

use serde_json::{Value, json};

use crate::{BenchArgs, Harness, client, drive, summary};

/// The console over the `read` scenario's messages, as a signed-in owner: the conversations page
/// (its 50 newest conversations with their contacts), then one thread page (its 50 latest
/// messages), each for the scenario's time. Two results: `<prefix>-list` and `<prefix>-thread`
/// (`console`, or `grown-console` over the `grown` scenario's database), each prefix its own
/// staff member.
pub(crate) async fn scenario(h: &Harness, args: &BenchArgs, seeded: &str, prefix: &str) -> anyhow::Result<Vec<Value>> {
    let org_id: String =
        h.db.write(async |conn| sqlx::query_scalar("SELECT id FROM orgs ORDER BY id LIMIT 1").fetch_one(conn).await)
            .await?;
    let password = "bench owner's password";
    let email = format!("{prefix}-owner@example.com");
    let config = msgline::Config::default();
    msgline::admin::create_staff(&h.db, &config, &org_id, &email, "owner", Some(password)).await?;
    let signed_in = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?
        .post(format!("{}/console/sign-in", h.base))
        .header("Origin", &h.base)
        .form(&[("email", email.as_str()), ("password", password)])
        .send()
        .await?;
    anyhow::ensure!(signed_in.status().is_redirection(), "console sign-in answered {}", signed_in.status());
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .ok_or_else(|| anyhow::anyhow!("console sign-in set no cookie"))?
        .to_string();
    let mut results = Vec::new();
    for (name, path) in [
        (format!("{prefix}-list"), "/console/conversations".to_string()),
        (format!("{prefix}-thread"), format!("/console/conversations/{seeded}")),
    ] {
        let http = client(args.connections);
        let url = format!("{}{path}", h.base);
        let cookie = cookie.clone();
        let (samples, elapsed) =
            drive(args.connections, args.seconds, move |_, _| http.get(&url).header("Cookie", &cookie)).await;
        let mut result = summary(&name, samples, elapsed, "pages");
        result["table_rows"] = json!(args.read_rows);
        results.push(result);
    }
    Ok(results)
}
