//! Logging: human-readable lines by default, JSON lines with `MSGLINE_LOG_FORMAT=json`.

use tracing_subscriber::EnvFilter;

pub fn init(config: &crate::Config) {
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if config.log_format == "json" { builder.json().try_init() } else { builder.try_init() };
}
