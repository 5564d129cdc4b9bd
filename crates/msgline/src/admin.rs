//! Operator commands (`msgline admin ...`): the same storage layer as `serve`, JSON answers.

use serde_json::{Value, json};

use crate::{
    clock,
    db::{
        self, Db,
        keys::NewKey,
        lines::{LineKind, NewLine},
    },
    domain::{phone::E164, scope::Scopes},
};

/// Creates an organisation and its first key, which carries every scope.
pub async fn create_org(db: &Db, name: &str) -> anyhow::Result<Value> {
    let name = name.trim();
    anyhow::ensure!(!name.is_empty() && name.chars().count() <= 200, "--name must be 1 to 200 characters");
    let org = db::orgs::create(db, name).await?;
    let scopes = Scopes::all();
    let (key, secret) =
        db::keys::create(db.writer(), NewKey { org_id: &org.id, name: "admin", scopes: &scopes, line_id: None })
            .await?;
    Ok(json!({"org_id": org.id, "api_key": secret, "key_id": key.id}))
}

/// Creates a key for an organisation.
pub async fn create_key(
    db: &Db,
    org_id: &str,
    scopes: &str,
    line_id: Option<&str>,
    name: Option<&str>,
) -> anyhow::Result<Value> {
    anyhow::ensure!(db::orgs::get(db, org_id).await?.is_some(), "no organisation {org_id}");
    let scopes = Scopes::parse(scopes.split(',').filter(|s| !s.trim().is_empty()))
        .map_err(|bad| anyhow::anyhow!("unknown scope {bad:?}"))?;
    anyhow::ensure!(!scopes.is_empty(), "--scopes needs at least one scope");
    if let Some(line_id) = line_id {
        anyhow::ensure!(
            db::lines::get_for_org(db, org_id, line_id).await?.is_some(),
            "no line {line_id} usable by {org_id}"
        );
    }
    let (key, secret) =
        db::keys::create(db.writer(), NewKey { org_id, name: name.unwrap_or("unnamed"), scopes: &scopes, line_id })
            .await?;
    Ok(json!({"key_id": key.id, "api_key": secret, "scopes": key.scopes.names(), "line_id": key.line_id}))
}

/// Registers a line and its bridge.
pub async fn create_line(
    db: &Db,
    e164: &str,
    kind: &str,
    org_id: Option<&str>,
    bridge_url: &str,
    bridge_token: Option<&str>,
) -> anyhow::Result<Value> {
    let e164 = E164::parse(e164, None).map_err(|e| anyhow::anyhow!("--e164: {}", e.describe(e164)))?;
    let kind = LineKind::parse(kind).ok_or_else(|| anyhow::anyhow!("--kind must be dedicated or shared"))?;
    match (kind, org_id) {
        (LineKind::Dedicated, None) => anyhow::bail!("a dedicated line needs --org"),
        (LineKind::Shared, Some(_)) => anyhow::bail!("a shared line belongs to every organisation: drop --org"),
        (LineKind::Dedicated, Some(org)) => {
            anyhow::ensure!(db::orgs::get(db, org).await?.is_some(), "no organisation {org}")
        }
        (LineKind::Shared, None) => {}
    }
    anyhow::ensure!(
        bridge_url.starts_with("http://") || bridge_url.starts_with("https://"),
        "--bridge-url must be an http:// or https:// URL"
    );
    let (line, secret) =
        match db::lines::create(db, NewLine { org_id, e164: e164.as_str(), kind, bridge_url, bridge_token }).await {
            Err(error) if db::is_unique_violation(&error) => anyhow::bail!("a line with number {e164} exists already"),
            other => other?,
        };
    Ok(json!({"line_id": line.id, "e164": line.e164, "kind": line.kind.as_str(), "bridge_secret": secret}))
}

/// Every line with its owner, bridge address and capabilities (never its credentials).
pub async fn list_lines(db: &Db) -> anyhow::Result<Value> {
    let lines = db::lines::list_all(db).await?;
    Ok(Value::Array(
        lines
            .iter()
            .map(|line| {
                json!({
                    "line_id": line.id,
                    "e164": line.e164,
                    "kind": line.kind.as_str(),
                    "org_id": line.org_id,
                    "bridge_url": line.bridge_url,
                    "capabilities": line.capabilities,
                    "status": line.status,
                    "created_at": clock::rfc3339(line.created_at),
                })
            })
            .collect(),
    ))
}
