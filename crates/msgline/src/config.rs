//! Typed settings: defaults, an optional TOML file, then `MSGLINE_*` environment variables.

use std::{fmt, net::SocketAddr, path::Path, time::Duration};

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use serde::{Deserialize, Serialize};

/// Everything `serve` and the admin commands need. Every field has a default, so an empty
/// environment runs.
#[derive(Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub listen: String,
    pub database_url: String,
    pub rate_limit_per_minute: u32,
    pub send_rate_limit_per_minute: u32,
    pub idempotency_ttl_hours: u64,
    pub bridge_timeout_ms: u64,
    /// Most calls to lines one instance has in flight at once (sends handed over by their
    /// request and those the dispatcher claims).
    pub dispatch_concurrency: usize,
    pub webhook_retry_schedule: String,
    /// An endpoint whose every attempt has failed for this long is disabled (`120h`: 5 days).
    pub webhook_disable_after: String,
    pub allow_private_targets: bool,
    pub log: String,
    pub log_format: String,
    /// An OTLP/HTTP collector's base URL (`http://127.0.0.1:4318`): traces are posted to
    /// `{base}/v1/traces`. Unset: no spans are made or sent. The operator's own address, so not
    /// held to the egress guard that customers' URLs are.
    pub otlp_endpoint: Option<String>,
    /// Seconds an authenticated key stays cached before it is read again. Revocation on the
    /// instance that revokes is immediate; other instances see it within this many seconds.
    pub key_cache_seconds: u64,
    /// Base URL of the OpenAI-compatible chat-completions API hosted agents use.
    pub agent_model_url: String,
    /// Bearer key for that API; never logged, never returned.
    pub agent_api_key: Option<String>,
    /// Model for agents that do not name one.
    pub agent_model: String,
    pub agent_timeout_ms: u64,
    /// Most runs one agent makes in one conversation per minute.
    pub agent_runs_per_minute: u32,
    /// Serves `POST /bench/floor` (one durable single-row insert), for `msgline bench` only.
    pub bench_routes: bool,
    /// The address devices reach this instance at, for the webhooks msgline registers with a
    /// BlueBubbles Server or an Android gateway; unset: `http://` + `listen`.
    pub public_url: Option<String>,
    /// Where this instance reaches its own API (`http://127.0.0.1:PORT` of the address it
    /// listens on), set when it binds; not read from the environment. MCP over HTTP calls the API
    /// through it.
    #[serde(skip)]
    pub loopback_url: Option<String>,
    /// A bearer token `GET /metrics` requires; unset: the endpoint is open to whoever reaches
    /// the listener (put it behind your network). Never logged.
    pub metrics_token: Option<String>,
    /// Redis, for rate limits every instance shares (`redis://127.0.0.1:6379`); unset: each
    /// instance counts in its own memory.
    pub redis_url: Option<String>,
    /// How long a poll takes votes, unless a newer poll in its conversation closes it first.
    pub poll_open_seconds: u64,
    /// How long `GET /availability` uses a remembered iMessage reachability before asking the
    /// line's device again.
    pub availability_ttl_seconds: u64,
    /// Where attachments' bytes are kept: `file://DIRECTORY` or `s3://BUCKET/PREFIX`.
    pub media_store: String,
    /// The largest attachment msgline fetches or receives, in bytes.
    pub media_max_bytes: u64,
    /// How far ahead a scheduled send's `send_at` must be, at least.
    pub schedule_min_seconds: u64,
    /// How late a scheduled send may still go out (the server was down at its time); later, it
    /// fails with `schedule_missed`.
    pub schedule_late_seconds: u64,
    /// Seconds between two probes of each line (its capabilities asked): a line whose probe
    /// fails is `offline` until one succeeds.
    pub line_check_seconds: u64,
    /// How long the event feed gives an event: a reader without a cursor starts this far back,
    /// and a cursor older than this is refused.
    pub feed_retention_hours: u64,
    /// Days a message is kept: older messages in a final state go, with their events, delivery
    /// attempts, webhook deliveries and attachments. `None` keeps everything.
    pub retention_days: Option<u64>,
    /// How long a connection may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request; then it is closed.
    pub header_read_timeout_seconds: u64,
    /// How long a request's body may take to arrive, from its headers; then the request is
    /// refused and its connection closed.
    pub body_read_timeout_seconds: u64,
    /// Most connections the server holds open at once; past that a new one is answered 503 and
    /// closed.
    pub max_connections: usize,
    /// Most connections one client address holds open at once; past that a new one is answered
    /// 429 and closed.
    pub max_connections_per_address: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            database_url: "sqlite://msgline.db".into(),
            rate_limit_per_minute: 100,
            send_rate_limit_per_minute: 60,
            idempotency_ttl_hours: 24,
            bridge_timeout_ms: 10_000,
            dispatch_concurrency: 256,
            webhook_retry_schedule: "5s,5m,30m,2h,5h,10h,10h".into(),
            webhook_disable_after: "120h".into(),
            allow_private_targets: false,
            log: "info".into(),
            log_format: "text".into(),
            otlp_endpoint: None,
            key_cache_seconds: 5,
            agent_model_url: "http://127.0.0.1:11434/v1".into(),
            agent_api_key: None,
            agent_model: "llama3.1".into(),
            agent_timeout_ms: 30_000,
            agent_runs_per_minute: 5,
            bench_routes: false,
            public_url: None,
            loopback_url: None,
            metrics_token: None,
            redis_url: None,
            poll_open_seconds: 7 * 86_400,
            availability_ttl_seconds: 86_400,
            media_store: "file://./msgline-media".into(),
            media_max_bytes: 25 * 1024 * 1024,
            schedule_min_seconds: 60,
            schedule_late_seconds: 3_600,
            line_check_seconds: 30,
            feed_retention_hours: 72,
            retention_days: None,
            header_read_timeout_seconds: 30,
            body_read_timeout_seconds: 60,
            max_connections: 10_000,
            max_connections_per_address: 1_000,
        }
    }
}

impl fmt::Debug for Config {
    // The database URL can carry a password: never print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database", &redact_url(&self.database_url))
            .field("rate_limit_per_minute", &self.rate_limit_per_minute)
            .field("send_rate_limit_per_minute", &self.send_rate_limit_per_minute)
            .field("idempotency_ttl_hours", &self.idempotency_ttl_hours)
            .field("bridge_timeout_ms", &self.bridge_timeout_ms)
            .field("dispatch_concurrency", &self.dispatch_concurrency)
            .field("webhook_retry_schedule", &self.webhook_retry_schedule)
            .field("webhook_disable_after", &self.webhook_disable_after)
            .field("allow_private_targets", &self.allow_private_targets)
            .field("agent_model_url", &self.agent_model_url)
            .field("agent_api_key", &self.agent_api_key.as_ref().map(|_| "***"))
            .field("agent_model", &self.agent_model)
            .field("redis", &self.redis_url.as_deref().map(redact_url))
            .field("otlp_endpoint", &self.otlp_endpoint.as_deref().map(redact_url))
            .finish_non_exhaustive()
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &creds[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

impl Config {
    /// Defaults, then the TOML file (if any), then the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            anyhow::ensure!(file.exists(), "config file {} does not exist", file.display());
            figment = figment.merge(Toml::file(file));
        }
        let config: Config = figment
            .merge(Env::prefixed("MSGLINE_").ignore(&["CONFIG"]))
            .extract()
            .map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        self.listen_addr()?;
        anyhow::ensure!(self.rate_limit_per_minute > 0, "MSGLINE_RATE_LIMIT_PER_MINUTE must be at least 1");
        anyhow::ensure!(self.send_rate_limit_per_minute > 0, "MSGLINE_SEND_RATE_LIMIT_PER_MINUTE must be at least 1");
        anyhow::ensure!(
            self.database_url.starts_with("sqlite:")
                || self.database_url.starts_with("postgres://")
                || self.database_url.starts_with("postgresql://"),
            "MSGLINE_DATABASE_URL must start with sqlite:// or postgres://"
        );
        crate::domain::webhook::RetrySchedule::parse(&self.webhook_retry_schedule)
            .map_err(|e| anyhow::anyhow!("MSGLINE_WEBHOOK_RETRY_SCHEDULE: {e}"))?;
        crate::domain::webhook::parse_duration(&self.webhook_disable_after)
            .map_err(|e| anyhow::anyhow!("MSGLINE_WEBHOOK_DISABLE_AFTER: {e}"))?;
        anyhow::ensure!(
            self.media_store.starts_with("file://") || self.media_store.starts_with("s3://"),
            "MSGLINE_MEDIA_STORE must be file://DIRECTORY or s3://BUCKET/PREFIX"
        );
        anyhow::ensure!(self.media_max_bytes > 0, "MSGLINE_MEDIA_MAX_BYTES must be at least 1");
        anyhow::ensure!(self.header_read_timeout_seconds > 0, "MSGLINE_HEADER_READ_TIMEOUT_SECONDS must be at least 1");
        anyhow::ensure!(self.body_read_timeout_seconds > 0, "MSGLINE_BODY_READ_TIMEOUT_SECONDS must be at least 1");
        anyhow::ensure!(self.max_connections > 0, "MSGLINE_MAX_CONNECTIONS must be at least 1");
        anyhow::ensure!(self.line_check_seconds > 0, "MSGLINE_LINE_CHECK_SECONDS must be at least 1");
        anyhow::ensure!(self.feed_retention_hours > 0, "MSGLINE_FEED_RETENTION_HOURS must be at least 1");
        anyhow::ensure!(
            self.retention_days != Some(0),
            "MSGLINE_RETENTION_DAYS must be at least 1 (leave it unset to keep every message)"
        );
        anyhow::ensure!(self.max_connections_per_address > 0, "MSGLINE_MAX_CONNECTIONS_PER_ADDRESS must be at least 1");
        if let Some(endpoint) = &self.otlp_endpoint {
            check_otlp_endpoint(endpoint)?;
        }
        Ok(())
    }

    pub fn listen_addr(&self) -> anyhow::Result<SocketAddr> {
        self.listen
            .parse()
            .map_err(|_| anyhow::anyhow!("MSGLINE_LISTEN is not an address like 127.0.0.1:8080: {}", self.listen))
    }

    /// Where devices send their webhooks: `public_url`, else `http://` + `listen`.
    pub fn public_base(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{}", self.listen),
        }
    }

    pub fn bridge_timeout(&self) -> Duration {
        Duration::from_millis(self.bridge_timeout_ms)
    }

    /// Where the OTLP exporter posts its spans: the configured base and `/v1/traces`.
    pub fn otlp_traces_url(&self) -> Option<String> {
        self.otlp_endpoint.as_deref().map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
    }
}

/// `MSGLINE_OTLP_ENDPOINT` is an http(s) URL with a host, and no query or fragment (the exporter
/// adds `/v1/traces` to its path).
fn check_otlp_endpoint(endpoint: &str) -> anyhow::Result<()> {
    // Shown without its password or query, either of which may be a token.
    let shown = redact_url(endpoint.split(['?', '#']).next().unwrap_or_default());
    let wrong = |why: &str| anyhow::anyhow!("MSGLINE_OTLP_ENDPOINT {shown}: {why}");
    let url = url::Url::parse(endpoint).map_err(|e| wrong(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(wrong("must be an http:// or https:// URL such as http://127.0.0.1:4318"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(wrong("has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(wrong("is a base URL: no query, no fragment (spans go to {base}/v1/traces)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_database_urls() {
        assert_eq!(redact_url("postgres://u:pw@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact_url("sqlite://msgline.db"), "sqlite://msgline.db");
        let config = Config {
            database_url: "postgres://u:hunter2@h/db".into(),
            agent_api_key: Some("sk-secret".into()),
            ..Config::default()
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("hunter2") && !printed.contains("sk-secret"));
    }

    #[test]
    fn an_otlp_endpoint_is_an_http_base_url() {
        let with = |endpoint: &str| Config { otlp_endpoint: Some(endpoint.into()), ..Config::default() };
        assert!(with("http://127.0.0.1:4318").validate().is_ok());
        assert!(with("https://collector.example/otlp/").validate().is_ok());
        assert_eq!(
            with("http://127.0.0.1:4318/").otlp_traces_url().as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        for wrong in ["127.0.0.1:4318", "grpc://127.0.0.1:4317", "http://", "http://h:4318/?token=x", "not a url"] {
            let error = with(wrong).validate().expect_err(wrong).to_string();
            assert!(error.starts_with("MSGLINE_OTLP_ENDPOINT") && !error.contains("token=x"), "{wrong}: {error}");
        }
    }
}
