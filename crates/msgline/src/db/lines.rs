//! Phone lines and their bridges. A dedicated line belongs to one organisation; a shared line
//! (no `org_id`) is usable by every organisation.

use serde::{Deserialize, Serialize};
use sqlx::{Row, any::AnyRow};

use super::{Db, ListQuery, Page, Paged};
use crate::{
    clock,
    domain::{
        apikey,
        lifecycle::Health,
        line_policy::{self, Overrides, Policy},
    },
    ids,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    Dedicated,
    Shared,
}

impl LineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Dedicated => "dedicated",
            LineKind::Shared => "shared",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "dedicated" => Some(LineKind::Dedicated),
            "shared" => Some(LineKind::Shared),
            _ => None,
        }
    }
}

/// How msgline talks to a line's device: its own bridge protocol (`docs/bridge-protocol.md`),
/// a BlueBubbles Server on a Mac, or SMS Gateway for Android (`docs/lines.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BridgeKind {
    #[serde(rename = "msgline")]
    Msgline,
    #[serde(rename = "bluebubbles")]
    BlueBubbles,
    #[serde(rename = "android-gateway")]
    AndroidGateway,
    #[serde(rename = "kannel")]
    Kannel,
}

impl BridgeKind {
    pub const ALL: [BridgeKind; 4] =
        [BridgeKind::Msgline, BridgeKind::BlueBubbles, BridgeKind::AndroidGateway, BridgeKind::Kannel];

    pub fn as_str(self) -> &'static str {
        match self {
            BridgeKind::Msgline => "msgline",
            BridgeKind::BlueBubbles => "bluebubbles",
            BridgeKind::AndroidGateway => "android-gateway",
            BridgeKind::Kannel => "kannel",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// A kind's settings: the device's credentials and the secret its webhooks to msgline carry.
/// Never returned by the API or the CLI, never logged (`Debug` hides them).
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct BridgeSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Carried by the webhook URL msgline registers with the device: it authenticates the hook
    /// route. The device may show that URL (the Android gateway lists it), so it signs nothing.
    #[serde(default)]
    pub hook_secret: String,
    /// The key msgline sets on an Android gateway for signing its webhooks: another random value
    /// than `hook_secret`. Empty on lines made before it existed, until their next connect gives
    /// them one (`adopt_signing_key`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signing_key: String,
    /// An Android line whose phone dials in (`--dial-in`): msgline holds its sends until the
    /// phone takes them, instead of calling it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dial_in: bool,
    /// A Kannel line's `smsc` (the `smsc-id` of kannel.conf that sends its messages), if named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kannel_smsc: Option<String>,
}

impl std::fmt::Debug for BridgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeSettings").field("username", &self.username).finish_non_exhaustive()
    }
}

/// What a line's bridge says it can do; `None` on the line until the bridge has been asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Capabilities {
    pub imessage: bool,
    pub sms: bool,
    pub groups: bool,
    pub polls: bool,
    /// Sends tapbacks (`kind: reaction`) over iMessage. Absent in a bridge's answer: no.
    #[serde(default)]
    pub reactions: bool,
    /// Shows a typing indicator in an iMessage conversation (`POST /v1/typing`).
    #[serde(default)]
    pub typing: bool,
    /// Sends read receipts for an iMessage conversation (`POST /v1/read`).
    #[serde(default)]
    pub read_receipts: bool,
    /// Sends files (`kind: media`) over iMessage.
    #[serde(default)]
    pub media: bool,
    /// Sends files over SMS too (MMS).
    #[serde(default)]
    pub mms: bool,
    /// Sends inline replies (`reply_to`) over iMessage.
    #[serde(default)]
    pub replies: bool,
    /// Edits iMessages it sent (`POST /v1/messages/{id}/edit`).
    #[serde(default)]
    pub edits: bool,
    /// Unsends iMessages it sent (`POST /v1/messages/{id}/unsend`).
    #[serde(default)]
    pub unsend: bool,
    /// Sends iMessages with a bubble or screen effect, and with a subject.
    #[serde(default)]
    pub effects: bool,
    /// Takes several sends in one call (`POST /v1/messages/batch`), at most this many; absent
    /// or 0: one call per message. Only the `msgline` kind's protocol has it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch: u16,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

#[derive(Debug, Clone)]
pub struct Line {
    pub id: String,
    pub org_id: Option<String>,
    pub e164: String,
    pub kind: LineKind,
    pub bridge_url: String,
    pub bridge_token: Option<String>,
    pub bridge_kind: BridgeKind,
    pub bridge_settings: BridgeSettings,
    pub capabilities: Option<Capabilities>,
    /// `unknown` until the bridge has been reached, then `online` or `offline`.
    pub status: String,
    pub checked_at: Option<i64>,
    pub created_at: i64,
    /// What an operator set of the sending policy, over the kind's defaults.
    pub policy: Overrides,
    /// Whether the line sends now, why not, and since when.
    pub health: Health,
    pub health_reason: Option<String>,
    pub health_since: Option<i64>,
}

impl Line {
    /// Whether an organisation may send from this line.
    pub fn usable_by(&self, org_id: &str) -> bool {
        self.org_id.as_deref().is_none_or(|owner| owner == org_id)
    }

    /// The sending policy in force: the kind's defaults with what an operator set over them.
    pub fn policy_in_force(&self) -> Policy {
        line_policy::defaults_for(self.bridge_kind.as_str()).with(&self.policy)
    }

    /// Whether a send on this line goes straight to the dispatcher: an active line with no limit.
    /// Any other send waits for the line's pacer.
    pub fn sends_directly(&self) -> bool {
        self.health == Health::Active && self.policy_in_force().is_unlimited()
    }
}

pub struct NewLine<'a> {
    pub org_id: Option<&'a str>,
    pub e164: &'a str,
    pub kind: LineKind,
    pub bridge_url: &'a str,
    pub bridge_token: Option<&'a str>,
    pub bridge_kind: BridgeKind,
    pub bridge_username: Option<&'a str>,
    pub bridge_password: Option<&'a str>,
    pub kannel_smsc: Option<&'a str>,
    pub dial_in: bool,
}

const COLUMNS: &str = "id, org_id, e164, kind, bridge_url, bridge_token, capabilities, status, checked_at, created_at, \
     bridge_kind, bridge_settings, policy, health, health_reason, health_since";

fn from_row(row: &AnyRow) -> sqlx::Result<Line> {
    let kind: String = row.try_get(3)?;
    let capabilities: Option<String> = row.try_get(6)?;
    Ok(Line {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        e164: row.try_get(2)?,
        kind: LineKind::parse(&kind).unwrap_or(LineKind::Dedicated),
        bridge_url: row.try_get(4)?,
        bridge_token: row.try_get(5)?,
        capabilities: capabilities.and_then(|text| serde_json::from_str(&text).ok()),
        status: row.try_get(7)?,
        checked_at: row.try_get(8)?,
        created_at: row.try_get(9)?,
        bridge_kind: BridgeKind::parse(&row.try_get::<String, _>(10)?).unwrap_or(BridgeKind::Msgline),
        bridge_settings: row
            .try_get::<Option<String>, _>(11)?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default(),
        policy: row
            .try_get::<Option<String>, _>(12)?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default(),
        health: row.try_get::<String, _>(13)?.parse().unwrap_or(Health::Active),
        health_reason: row.try_get(14)?,
        health_since: row.try_get(15)?,
    })
}

/// Registers a line and mints the secret its bridge presents when it calls back.
pub async fn create(db: &Db, new: NewLine<'_>) -> sqlx::Result<(Line, String)> {
    let secret = apikey::random_secret("mlb_");
    let line = Line {
        id: ids::new_id("line"),
        org_id: new.org_id.map(str::to_string),
        e164: new.e164.to_string(),
        kind: new.kind,
        bridge_url: new.bridge_url.trim_end_matches('/').to_string(),
        bridge_token: new.bridge_token.map(str::to_string),
        bridge_kind: new.bridge_kind,
        bridge_settings: BridgeSettings {
            username: new.bridge_username.map(str::to_string),
            password: new.bridge_password.map(str::to_string),
            hook_secret: apikey::random_secret("mlh_"),
            signing_key: match new.bridge_kind {
                BridgeKind::AndroidGateway => apikey::random_secret("mls_"),
                BridgeKind::Msgline | BridgeKind::BlueBubbles | BridgeKind::Kannel => String::new(),
            },
            kannel_smsc: new.kannel_smsc.map(str::to_string),
            dial_in: new.dial_in,
        },
        capabilities: None,
        status: "unknown".into(),
        checked_at: None,
        created_at: clock::now_ms(),
        policy: Overrides::new(),
        health: Health::Active,
        health_reason: None,
        health_since: None,
    };
    sqlx::query(
        "INSERT INTO lines (id, org_id, e164, kind, bridge_url, bridge_token, bridge_secret_hash, status, created_at, \
         bridge_kind, bridge_settings) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&line.id)
    .bind(&line.org_id)
    .bind(&line.e164)
    .bind(line.kind.as_str())
    .bind(&line.bridge_url)
    .bind(&line.bridge_token)
    .bind(apikey::hash_secret(&secret))
    .bind(&line.status)
    .bind(line.created_at)
    .bind(line.bridge_kind.as_str())
    .bind(serde_json::to_string(&line.bridge_settings).expect("plain struct"))
    .execute(db.writer())
    .await?;
    Ok((line, secret))
}

/// Gives a line that has no webhook signing key `fresh` as its key, and returns the key the line
/// has now: `fresh`, or the one another instance stored first (compared on the stored text, so of
/// two instances adopting at once, one wins and the other learns its key).
pub async fn adopt_signing_key(db: &Db, id: &str, fresh: &str) -> sqlx::Result<String> {
    loop {
        let (stored,): (Option<String>,) =
            sqlx::query_as("SELECT bridge_settings FROM lines WHERE id = $1").bind(id).fetch_one(db.writer()).await?;
        let mut settings: BridgeSettings =
            stored.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
        if !settings.signing_key.is_empty() {
            return Ok(settings.signing_key);
        }
        settings.signing_key = fresh.to_string();
        let written =
            sqlx::query("UPDATE lines SET bridge_settings = $1 WHERE id = $2 AND COALESCE(bridge_settings, '') = $3")
                .bind(serde_json::to_string(&settings).expect("plain struct"))
                .bind(id)
                .bind(stored.unwrap_or_default())
                .execute(db.writer())
                .await?;
        if written.rows_affected() == 1 {
            return Ok(settings.signing_key);
        }
    }
}

/// Every line, for the operator.
pub async fn list_all(db: &Db) -> sqlx::Result<Vec<Line>> {
    let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM lines ORDER BY id")).fetch_all(db.reader()).await?;
    rows.iter().map(from_row).collect()
}

/// The lines an organisation may use: its dedicated lines and every shared line.
pub async fn list_for_org(db: &Db, org_id: &str, page: &Page) -> sqlx::Result<Paged<Line>> {
    ListQuery::new(format!("SELECT {COLUMNS} FROM lines WHERE (org_id = $1 OR org_id IS NULL)"), org_id)
        .fetch(db, page, from_row, |l| &l.id)
        .await
}

/// A line by id, whoever owns it.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<Line>> {
    let row =
        sqlx::query(&format!("SELECT {COLUMNS} FROM lines WHERE id = $1")).bind(id).fetch_optional(db.reader()).await?;
    row.as_ref().map(from_row).transpose()
}

/// A line the organisation may use, by id.
pub async fn get_for_org(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Line>> {
    Ok(get(db, id).await?.filter(|line| line.usable_by(org_id)))
}

/// A line by its number, whoever owns it.
pub async fn get_by_e164(db: &Db, e164: &str) -> sqlx::Result<Option<Line>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM lines WHERE e164 = $1"))
        .bind(e164)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The line whose bridge presents this secret.
pub async fn find_by_bridge_secret(db: &Db, secret: &str) -> sqlx::Result<Option<Line>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM lines WHERE bridge_secret_hash = $1"))
        .bind(apikey::hash_secret(secret))
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Records what the bridge said it can do and whether it answered.
pub async fn record_check(db: &Db, id: &str, capabilities: Option<Capabilities>) -> sqlx::Result<()> {
    let status = if capabilities.is_some() { "online" } else { "offline" };
    let capabilities = capabilities.map(|c| serde_json::to_string(&c).expect("plain struct"));
    sqlx::query(
        "UPDATE lines SET capabilities = COALESCE($1, capabilities), status = $2, checked_at = $3 WHERE id = $4",
    )
    .bind(capabilities)
    .bind(status)
    .bind(clock::now_ms())
    .bind(id)
    .execute(db.writer())
    .await?;
    Ok(())
}

/// Stores what an operator set of a line's sending policy (`PATCH /lines/{id}`).
pub async fn set_policy(db: &Db, id: &str, policy: &Overrides) -> sqlx::Result<()> {
    let text = serde_json::to_string(policy).expect("a map of numbers");
    db.transaction(async |tx| {
        sqlx::query("UPDATE lines SET policy = $1 WHERE id = $2").bind(text).bind(id).execute(&mut *tx).await?;
        announce(tx, id).await
    })
    .await
}

/// The channel on which the instances sharing a PostgreSQL hear that a line's health or policy
/// changed (`NOTIFY`, sent when the change commits), so that each forgets what it cached of the
/// line at once: a line paused through one instance sends nothing through another.
pub const CHANNEL: &str = "msgline_lines";

/// Tells the other instances, when the transaction commits, that line `id` changed.
async fn announce(conn: &mut sqlx::AnyConnection, id: &str) -> sqlx::Result<()> {
    super::notify(super::Backend::of(conn), &mut *conn, CHANNEL, id).await
}

/// A line by id inside a transaction, its row held until the transaction ends (on PostgreSQL;
/// on SQLite the transaction holds the write lock already). `FOR NO KEY UPDATE`: it excludes
/// another pacing step or health change of the line, but not the key-share locks that inserting
/// a message on the line takes (its foreign key), so sends are never held behind a step.
pub async fn get_locked(conn: &mut sqlx::AnyConnection, id: &str) -> sqlx::Result<Option<Line>> {
    let lock = match super::Backend::of(conn) {
        super::Backend::Postgres => " FOR NO KEY UPDATE",
        super::Backend::Sqlite => "",
    };
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM lines WHERE id = $1{lock}"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A line's move from one health to another, as written.
#[derive(Debug, Clone)]
pub struct HealthChange {
    pub line: Line,
    pub previous: Health,
}

/// Moves a line to `to` with `reason` if its health now is one of `from`, with the event
/// `messaging.line.health_changed` for each organisation that uses the line (a dedicated line's
/// own; for a shared line, every organisation with a webhook endpoint), in one transaction. `None`:
/// the line is gone, or its health was not one of `from` (nothing written).
pub async fn change_health(
    db: &Db,
    id: &str,
    from: &[Health],
    to: Health,
    reason: Option<&str>,
) -> sqlx::Result<Option<HealthChange>> {
    db.transaction(async |tx| {
        let Some(mut line) = get_locked(tx, id).await? else { return Ok(None) };
        let previous = line.health;
        if previous == to || !from.contains(&previous) {
            return Ok(None);
        }
        let now = clock::now_ms();
        sqlx::query("UPDATE lines SET health = $1, health_reason = $2, health_since = $3 WHERE id = $4")
            .bind(to.as_str())
            .bind(reason)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        (line.health, line.health_reason, line.health_since) = (to, reason.map(str::to_string), Some(now));
        let data = serde_json::json!({
            "line_id": line.id, "health": to.as_str(), "previous": previous.as_str(), "reason": reason,
        })
        .to_string();
        let orgs: Vec<String> = match &line.org_id {
            Some(org) => vec![org.clone()],
            // A shared line's change, for every organisation that wants events.
            None => {
                sqlx::query_scalar(
                    "SELECT DISTINCT org_id FROM webhooks UNION SELECT id FROM orgs WHERE event_feed = 1",
                )
                .fetch_all(&mut *tx)
                .await?
            }
        };
        for org in orgs {
            super::events::insert(tx, &org, "messaging.line.health_changed", None, data.clone()).await?;
        }
        announce(tx, id).await?;
        Ok(Some(HealthChange { line, previous }))
    })
    .await
}
