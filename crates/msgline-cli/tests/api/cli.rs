//! The operator CLI (`msgline admin ...`), run as the real binary on the test app's database:
//! JSON on stdout, a one-line error on stderr and a non-zero exit when it fails.

use serde_json::{Value, json};

use crate::helpers::{TestApp, cli_json, ids, spawn_app};

/// Runs a command that must fail; returns its one-line error.
async fn cli_failure(app: &TestApp, args: &[&str]) -> String {
    let output = app.cli(args).await;
    assert!(!output.status.success(), "{args:?} succeeded: {}", String::from_utf8_lossy(&output.stdout));
    assert!(output.stdout.is_empty(), "{args:?} printed on stdout: {}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8(output.stderr).expect("UTF-8 on stderr");
    let error = stderr.trim_end_matches('\n');
    assert!(!error.is_empty() && !error.contains('\n'), "{args:?}: not one line: {stderr:?}");
    error.to_string()
}

/// The member names of a JSON object, sorted.
fn members(value: &Value) -> Vec<String> {
    let mut names: Vec<String> = value.as_object().expect("a JSON object").keys().cloned().collect();
    names.sort();
    names
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"))
}

#[tokio::test]
async fn admin_org_create_prints_an_organisation_and_a_key_that_works() {
    let app = spawn_app().await;
    let org = cli_json(&app.cli(&["admin", "org", "create", "--name", "Acme"]).await);
    assert_eq!(members(&org), ["api_key", "key_id", "org_id"]);
    assert!(text(&org, "org_id").starts_with("org_"), "{org}");
    assert!(text(&org, "key_id").starts_with("key_"), "{org}");
    assert!(text(&org, "api_key").starts_with("mlk_"), "{org}");

    // The key works against the running app, has every scope and belongs to the new organisation.
    let key = text(&org, "api_key");
    let keys = app.get("/keys", key).await.expect(200);
    assert_eq!(ids(&keys), [text(&org, "key_id")]);
    assert_eq!(keys["data"][0]["scopes"].as_array().unwrap().len(), 7, "every scope, messaging_lines too");
    app.post("/contacts", key, json!({"phone": "+12015550123"})).await.expect(201);
    assert_eq!(app.get("/contacts", &app.org.key).await.expect(200)["data"], json!([]), "a separate organisation");
}

#[tokio::test]
async fn admin_key_create_prints_a_key_bound_to_a_line() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550195", Some(&app.org)).await;
    app.create_line_id("+12015550196", None).await;
    let args = ["admin", "key", "create", "--org", &app.org.id, "--scopes", "messaging_read", "--line", &line];
    let key = cli_json(&app.cli(&args).await);
    assert!(text(&key, "key_id").starts_with("key_"), "{key}");
    assert!(text(&key, "api_key").starts_with("mlk_"), "{key}");
    assert_eq!(key["scopes"], json!(["messaging_read"]));
    assert_eq!(key["line_id"], line);

    let secret = text(&key, "api_key");
    assert_eq!(ids(&app.get("/lines", secret).await.expect(200)), [line]);
    app.post("/contacts", secret, json!({"phone": "+12015550123"})).await.expect_error(
        403,
        "missing messaging_contacts scope",
        None,
    );
}

#[tokio::test]
async fn admin_key_create_takes_several_scopes_and_a_name() {
    let app = spawn_app().await;
    let args =
        ["admin", "key", "create", "--org", &app.org.id, "--scopes", "messaging_send,messaging_read", "--name", "ops"];
    let key = cli_json(&app.cli(&args).await);
    assert_eq!(key["scopes"], json!(["messaging_send", "messaging_read"]));
    assert_eq!(key["line_id"], Value::Null);
    let listed = app.get("/keys", &app.org.key).await.expect(200);
    let listed = listed["data"].as_array().unwrap().iter().find(|k| k["id"] == key["key_id"]).cloned().unwrap();
    assert_eq!(listed["name"], "ops");
}

#[tokio::test]
async fn admin_line_create_registers_dedicated_and_shared_lines() {
    let app = spawn_app().await;
    let other = app.create_org("Other").await;
    let dedicated = cli_json(
        &app.cli(&[
            "admin",
            "line",
            "create",
            "--e164",
            "+1 201 555 0197",
            "--kind",
            "dedicated",
            "--org",
            &app.org.id,
            "--bridge-url",
            "http://127.0.0.1:9090",
            "--bridge-token",
            "t0ken",
        ])
        .await,
    );
    assert_eq!(members(&dedicated), ["bridge_secret", "e164", "kind", "line_id"]);
    assert!(text(&dedicated, "line_id").starts_with("line_"), "{dedicated}");
    assert_eq!(dedicated["e164"], "+12015550197");
    assert_eq!(dedicated["kind"], "dedicated");
    assert!(text(&dedicated, "bridge_secret").len() > 20, "{dedicated}");

    let shared = cli_json(
        &app.cli(&[
            "admin",
            "line",
            "create",
            "--e164",
            "+12015550198",
            "--kind",
            "shared",
            "--bridge-url",
            "https://bridge.example.com",
        ])
        .await,
    );
    assert_eq!(shared["kind"], "shared");
    assert_ne!(shared["bridge_secret"], dedicated["bridge_secret"]);

    let dedicated_id = text(&dedicated, "line_id").to_string();
    let shared_id = text(&shared, "line_id").to_string();
    let mut expected = vec![dedicated_id.clone(), shared_id.clone()];
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids(&app.get("/lines", &app.org.key).await.expect(200)), expected);
    assert_eq!(ids(&app.get("/lines", &other.key).await.expect(200)), [shared_id]);
}

#[tokio::test]
async fn admin_line_list_prints_every_line_as_a_json_array() {
    let app = spawn_app().await;
    let empty = cli_json(&app.cli(&["admin", "line", "list"]).await);
    assert_eq!(empty, json!([]));

    let dedicated = app.create_line_id("+12015550199", Some(&app.org)).await;
    let shared = app.create_line_id("+12015550100", None).await;
    let list = cli_json(&app.cli(&["admin", "line", "list"]).await);
    let lines = list.as_array().expect("a JSON array");
    assert_eq!(lines.len(), 2);
    let find = |id: &str| lines.iter().find(|l| l["line_id"] == id).cloned().unwrap_or_else(|| panic!("{id}: {list}"));
    let (d, s) = (find(&dedicated), find(&shared));
    assert_eq!(
        (&d["kind"], &d["org_id"], &d["e164"]),
        (&json!("dedicated"), &json!(app.org.id), &json!("+12015550199"))
    );
    assert_eq!((&s["kind"], &s["org_id"]), (&json!("shared"), &Value::Null));
    assert!(d.get("capabilities").is_some() && d.get("status").is_some(), "{d}");
    for line in lines {
        assert!(line.get("bridge_token").is_none() && line.get("bridge_secret").is_none(), "{line}");
    }
    assert!(!list.to_string().contains("bridge-token"), "the bridge token is never printed");
}

#[tokio::test]
async fn admin_failures_exit_non_zero_with_one_line_on_stderr() {
    let app = spawn_app().await;
    app.create_line_id("+12015550101", None).await;
    let org = app.org.id.as_str();
    let bridge = "http://127.0.0.1:9";
    let line_create =
        |e164: &'static str, kind: &'static str| ["admin", "line", "create", "--e164", e164, "--kind", kind];

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["admin", "key", "create", "--org", org, "--scopes", "messaging_root"], "messaging_root"),
        (vec!["admin", "key", "create", "--org", org, "--scopes", ""], "scope"),
        (vec!["admin", "key", "create", "--org", "org_unknown", "--scopes", "messaging_read"], "org_unknown"),
        (vec!["admin", "key", "create", "--org", org, "--scopes", "messaging_read", "--line", "line_x"], "line_x"),
        ([&line_create("+12015550102", "dedicated")[..], &["--bridge-url", bridge]].concat(), "--org"),
        ([&line_create("+12015550103", "shared")[..], &["--org", org, "--bridge-url", bridge]].concat(), "--org"),
        ([&line_create("+12015550101", "shared")[..], &["--bridge-url", bridge]].concat(), "+12015550101"),
        ([&line_create("12345", "shared")[..], &["--bridge-url", bridge]].concat(), "--e164"),
        ([&line_create("+1 999", "shared")[..], &["--bridge-url", bridge]].concat(), "--e164"),
        ([&line_create("+12015550104", "roaming")[..], &["--bridge-url", bridge]].concat(), "--kind"),
        ([&line_create("+12015550105", "shared")[..], &["--bridge-url", "ftp://bridge"]].concat(), "--bridge-url"),
        (vec!["admin", "org", "create", "--name", "  "], "--name"),
    ];
    for (args, mentions) in cases {
        let error = cli_failure(&app, &args).await;
        assert!(error.starts_with("error: "), "{args:?}: {error}");
        assert!(error.contains(mentions), "{args:?}: {error:?} should mention {mentions:?}");
    }

    // Nothing was written by the failures.
    let lines = cli_json(&app.cli(&["admin", "line", "list"]).await);
    assert_eq!(lines.as_array().unwrap().len(), 1, "{lines}");
    assert_eq!(ids(&app.get("/keys", &app.org.key).await.expect(200)), [app.org.key_id.as_str()]);
}

#[tokio::test]
async fn admin_commands_print_nothing_but_json_on_stdout() {
    let app = spawn_app().await;
    let output = app.cli(&["admin", "org", "create", "--name", "Quiet"]).await;
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(stdout.trim_start().starts_with('{') && stdout.trim_end().ends_with('}'), "{stdout}");
    cli_json(&output);
}
