//! Operator commands (`msgline admin ...`): the same storage layer as `serve`, JSON answers.

use serde_json::{Value, json};

use crate::{
    bridge::client::BridgeClient,
    clock,
    config::Config,
    db::{
        self, Db,
        keys::NewKey,
        lines::{BridgeKind, LineKind, NewLine},
    },
    domain::{phone::E164, scope::Scopes, staff},
};

/// A random secret with the given prefix: a bridge token for a line created with [`create_line`].
pub use crate::domain::apikey::random_secret;

/// Creates an organisation and its first key, which carries every scope.
pub async fn create_org(db: &Db, name: &str) -> anyhow::Result<Value> {
    let name = name.trim();
    anyhow::ensure!(!name.is_empty() && name.chars().count() <= 200, "--name must be 1 to 200 characters");
    let org = db::orgs::create(db, name).await?;
    let scopes = Scopes::all();
    let (key, secret) =
        db::keys::create(db, NewKey { org_id: &org.id, name: "admin", scopes: &scopes, line_id: None }).await?;
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
        db::keys::create(db, NewKey { org_id, name: name.unwrap_or("unnamed"), scopes: &scopes, line_id }).await?;
    Ok(json!({"key_id": key.id, "api_key": secret, "scopes": key.scopes.names(), "line_id": key.line_id}))
}

/// `msgline admin line create`'s arguments.
pub struct LineSetup<'a> {
    pub e164: &'a str,
    pub kind: &'a str,
    pub org_id: Option<&'a str>,
    pub bridge_url: &'a str,
    pub bridge_token: Option<&'a str>,
    pub bridge_kind: &'a str,
    pub bridge_username: Option<&'a str>,
    pub bridge_password: Option<&'a str>,
    /// A Kannel line's `smsc-id` (`--kannel-smsc`).
    pub kannel_smsc: Option<&'a str>,
    /// An Android line whose phone dials in (`--dial-in`): no bridge URL or credentials.
    pub dial_in: bool,
}

impl<'a> LineSetup<'a> {
    /// A line on msgline's own bridge protocol.
    pub fn msgline(
        e164: &'a str,
        kind: &'a str,
        org_id: Option<&'a str>,
        bridge_url: &'a str,
        bridge_token: Option<&'a str>,
    ) -> Self {
        Self {
            e164,
            kind,
            org_id,
            bridge_url,
            bridge_token,
            bridge_kind: "msgline",
            bridge_username: None,
            bridge_password: None,
            kannel_smsc: None,
            dial_in: false,
        }
    }
}

/// Registers a line and its bridge.
pub async fn create_line(db: &Db, setup: LineSetup<'_>) -> anyhow::Result<Value> {
    let LineSetup {
        e164,
        kind,
        org_id,
        bridge_url,
        bridge_token,
        bridge_kind,
        bridge_username,
        bridge_password,
        kannel_smsc,
        dial_in,
    } = setup;
    let e164 = E164::parse(e164, None).map_err(|e| anyhow::anyhow!("--e164: {}", e.describe(e164)))?;
    let kind = LineKind::parse(kind).ok_or_else(|| anyhow::anyhow!("--kind must be dedicated or shared"))?;
    let bridge_kind = BridgeKind::parse(bridge_kind)
        .ok_or_else(|| anyhow::anyhow!("--bridge-kind must be msgline, bluebubbles, android-gateway or kannel"))?;
    anyhow::ensure!(
        kannel_smsc.is_none() || bridge_kind == BridgeKind::Kannel,
        "--kannel-smsc is for --bridge-kind kannel"
    );
    match (kind, org_id) {
        (LineKind::Dedicated, None) => anyhow::bail!("a dedicated line needs --org"),
        (LineKind::Shared, Some(_)) => anyhow::bail!("a shared line belongs to every organisation: drop --org"),
        (LineKind::Dedicated, Some(org)) => {
            anyhow::ensure!(db::orgs::get(db, org).await?.is_some(), "no organisation {org}")
        }
        (LineKind::Shared, None) => {}
    }
    if dial_in {
        anyhow::ensure!(bridge_kind == BridgeKind::AndroidGateway, "--dial-in is for --bridge-kind android-gateway");
        anyhow::ensure!(
            bridge_url.is_empty() && bridge_username.is_none() && bridge_password.is_none() && bridge_token.is_none(),
            "a --dial-in line's phone calls msgline: give no --bridge-url, --bridge-username, --bridge-password or --bridge-token"
        );
    } else {
        anyhow::ensure!(
            bridge_url.starts_with("http://") || bridge_url.starts_with("https://"),
            "--bridge-url must be an http:// or https:// URL (or --dial-in for an Android phone that calls msgline)"
        );
    }
    match bridge_kind {
        BridgeKind::AndroidGateway if dial_in => {}
        BridgeKind::Msgline => anyhow::ensure!(
            bridge_username.is_none() && bridge_password.is_none(),
            "--bridge-username and --bridge-password are for --bridge-kind bluebubbles, android-gateway or kannel"
        ),
        BridgeKind::BlueBubbles => {
            anyhow::ensure!(bridge_password.is_some(), "--bridge-kind bluebubbles needs --bridge-password");
            anyhow::ensure!(bridge_username.is_none(), "--bridge-kind bluebubbles takes no --bridge-username");
            anyhow::ensure!(bridge_token.is_none(), "--bridge-token is for --bridge-kind msgline");
        }
        BridgeKind::AndroidGateway | BridgeKind::Kannel => {
            anyhow::ensure!(
                bridge_username.is_some() && bridge_password.is_some(),
                "--bridge-kind {} needs --bridge-username and --bridge-password",
                bridge_kind.as_str()
            );
            anyhow::ensure!(bridge_token.is_none(), "--bridge-token is for --bridge-kind msgline");
        }
    }
    let new = NewLine {
        org_id,
        e164: e164.as_str(),
        kind,
        bridge_url,
        bridge_token,
        bridge_kind,
        bridge_username,
        bridge_password,
        kannel_smsc,
        dial_in,
    };
    let (line, secret) = match db::lines::create(db, new).await {
        Err(error) if db::is_unique_violation(&error) => anyhow::bail!("a line with number {e164} exists already"),
        other => other?,
    };
    let mut answer =
        json!({"line_id": line.id, "e164": line.e164, "kind": line.kind.as_str(), "bridge_secret": secret});
    // The contract's answer for the msgline kind is unchanged; other kinds say theirs.
    if line.bridge_kind != BridgeKind::Msgline {
        answer["bridge_kind"] = json!(line.bridge_kind.as_str());
    }
    if dial_in {
        // The app's "private token": it registers the phone, once per phone (shown once).
        let token = crate::domain::apikey::random_secret("mlr_");
        db::dial_in::create(db, &line.id, &crate::domain::apikey::hash_secret(&token)).await?;
        answer["registration_token"] = json!(token);
    }
    Ok(answer)
}

/// Registers msgline's webhook with a new line's device where its kind takes one, and says how
/// that went in the answer (`webhook_registered`, `webhook_error`); a running `serve` keeps
/// trying when the device cannot be reached now.
pub async fn connect_line(db: &Db, config: &Config, answer: &mut Value) -> anyhow::Result<()> {
    let id = answer["line_id"].as_str().unwrap_or_default();
    let Some(line) = db::lines::get(db, id).await? else { return Ok(()) };
    if line.bridge_kind == BridgeKind::Msgline {
        return Ok(());
    }
    if line.bridge_settings.dial_in {
        // Where the phone calls: the app's private-server address.
        answer["device_api_url"] = json!(format!("{}/api/mobile/v1", config.public_base()));
        return Ok(());
    }
    if line.bridge_kind == BridgeKind::Kannel {
        // Kannel takes no registration: its operator pastes this into kannel.conf (shown once).
        let hooks = format!("{}/api/v1/messaging/bridge/hooks", config.public_base());
        answer["hook_url"] = json!(crate::bridge::kannel::Kannel::hook_url(&hooks, &line));
        return Ok(());
    }
    let media = crate::media::MediaStore::open(&config.media_store)?;
    let connected = BridgeClient::new(config, db.clone(), media).connect(&line).await;
    answer["webhook_registered"] = json!(connected.is_ok());
    if let Err(error) = connected {
        answer["webhook_error"] = json!(error);
    }
    Ok(())
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
                    "bridge_kind": line.bridge_kind.as_str(),
                    "bridge_url": line.bridge_url,
                    "capabilities": line.capabilities,
                    "status": line.status,
                    "created_at": clock::rfc3339(line.created_at),
                    "policy": line.policy_in_force(),
                    "health": line.health.as_str(),
                    "health_reason": line.health_reason,
                })
            })
            .collect(),
    ))
}

/// `msgline admin staff create`: a staff member of an organisation, with a one-time sign-in link
/// (a day) where they set a password, or with the password given (read from stdin by the
/// command, never from its arguments).
pub async fn create_staff(
    db: &Db,
    config: &Config,
    org_id: &str,
    email: &str,
    role: &str,
    password: Option<&str>,
) -> anyhow::Result<Value> {
    anyhow::ensure!(db::orgs::get(db, org_id).await?.is_some(), "no organisation {org_id}");
    let email = staff::parse_email(email).map_err(|e| anyhow::anyhow!("--email: {e}"))?;
    let role = staff::Role::parse(role).ok_or_else(|| anyhow::anyhow!("--role must be owner or member"))?;
    let hash = match password {
        Some(password) => {
            staff::check_password(password).map_err(|e| anyhow::anyhow!("the password: {e}"))?;
            Some(staff::hash_password(password))
        }
        None => None,
    };
    let now = clock::now_ms();
    let (member, link) =
        match db::staff::create(db, org_id, &email, role, hash.as_deref(), now, crate::console::LINK_MS).await {
            Err(error) if db::is_unique_violation(&error) => anyhow::bail!("{email} is a staff member already"),
            other => other?,
        };
    Ok(json!({
        "staff_id": member.id,
        "email": member.email,
        "role": member.role.as_str(),
        "sign_in_url": format!("{}/console/welcome?token={}", config.public_base(), link.token),
        "sign_in_url_expires_at": clock::rfc3339(link.expires_at),
    }))
}

/// `msgline admin staff list`: an organisation's staff (never a password or a link).
pub async fn list_staff(db: &Db, org_id: &str) -> anyhow::Result<Value> {
    let members = db::staff::list(db, org_id).await?;
    Ok(Value::Array(
        members
            .iter()
            .map(|m| {
                json!({
                    "staff_id": m.id,
                    "email": m.email,
                    "role": m.role.as_str(),
                    "has_password": m.has_password,
                    "created_at": clock::rfc3339(m.created_at),
                })
            })
            .collect(),
    ))
}

/// `msgline admin staff remove`: removes a staff member and ends their sessions at once.
pub async fn remove_staff(db: &Db, staff_id: &str) -> anyhow::Result<Value> {
    anyhow::ensure!(db::staff::remove(db, None, staff_id, clock::now_ms()).await?, "no staff member {staff_id}");
    Ok(json!({"staff_id": staff_id, "removed": true}))
}

/// `msgline admin line update --id LINE [--policy JSON] [--pause | --resume]`: the operator's
/// hand on any line, shared lines included: the policy as `PATCH /lines/{id}` takes it, and the
/// line's pause or resume. Prints the line as `admin line list` shows it. A running server reads
/// the change within `MSGLINE_LINE_CHECK_SECONDS` at most (its pacer at its next step at once).
pub async fn update_line(db: &Db, id: &str, policy: Option<&str>, pause: bool, resume: bool) -> anyhow::Result<Value> {
    anyhow::ensure!(!(pause && resume), "give --pause or --resume, not both");
    let line = db::lines::get(db, id).await?.ok_or_else(|| anyhow::anyhow!("no line {id}"))?;
    if let Some(policy) = policy {
        let policy: Value = serde_json::from_str(policy).map_err(|e| anyhow::anyhow!("--policy is not JSON: {e}"))?;
        let overrides = crate::domain::line_policy::patch(&line.policy, &policy)
            .map_err(|(field, why)| anyhow::anyhow!("{field}: {why}"))?;
        db::lines::set_policy(db, id, &overrides).await?;
    }
    if pause {
        crate::lines::health::pause(db, id).await?;
    }
    if resume {
        crate::lines::health::resume(db, id).await?;
    }
    let lines = list_lines(db).await?;
    let shown = lines.as_array().into_iter().flatten().find(|line| line["line_id"] == id).cloned();
    Ok(shown.unwrap_or(Value::Null))
}

/// `msgline admin backup --to FILE`: a consistent copy of the database at `url`, made while
/// servers run on it (docs/operations.md, "Backup and restore").
pub async fn backup(url: &str, to: &std::path::Path) -> anyhow::Result<Value> {
    db::backup::backup(url, to).await
}

/// `msgline admin restore --from FILE`: a backup loaded into the empty database at `url`.
pub async fn restore(url: &str, from: &std::path::Path) -> anyhow::Result<Value> {
    db::backup::restore(url, from).await
}
