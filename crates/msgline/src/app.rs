//! The application: database, migrations, the HTTP server and its background work.

use std::{
    future::Future,
    net::{Ipv4Addr, Ipv6Addr},
    sync::Arc,
    time::Duration,
};

use tokio::net::TcpListener;

use crate::{
    agents::Agents, api, caller::AuthCache, config::Config, db::Db, ratelimit::RateLimits, send::Sender,
    services::Services,
};

pub struct Application {
    listener: TcpListener,
    state: Services,
}

impl Application {
    /// Connects, migrates and binds the listener; nothing is served until
    /// [`Application::run_until_stopped`].
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        // Recording starts with the server, so that `/metrics` counts from its first request.
        crate::metrics::handle();
        let numbering_plan = tokio::task::spawn_blocking(crate::domain::phone::E164::load_numbering_plan);
        let db = Db::connect(&config.database_url).await?;
        db.migrate().await?;
        numbering_plan.await?;
        if config.bench_routes {
            crate::db::bench::prepare(&db).await?;
        }
        let addr = config.listen_addr()?;
        let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let mut config = config;
        if config.public_url.is_none() {
            // Port 0 picks a port: devices must be told the one picked.
            config.public_url = Some(format!("http://{}", listener.local_addr()?));
        }
        let mut own = listener.local_addr()?;
        if own.ip().is_unspecified() {
            own.set_ip(if own.is_ipv4() { Ipv4Addr::LOCALHOST.into() } else { Ipv6Addr::LOCALHOST.into() });
        }
        config.loopback_url = Some(format!("http://{own}"));
        Ok(Self { listener, state: wire(db, config)? })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn state(&self) -> Services {
        self.state.clone()
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish.
    pub async fn run_until_stopped(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let state = self.state.clone();
        let (stop_workers, stopped) = tokio::sync::watch::channel(false);
        let workers = crate::workers::spawn_all(&state.sender, &state.agents, &state.auth, stopped);
        let pruner = tokio::spawn({
            let state = state.clone();
            async move {
                let mut tick = tokio::time::interval(Duration::from_secs(60));
                loop {
                    tick.tick().await;
                    state.limits.prune();
                }
            }
        });
        tracing::info!(addr = %self.listener.local_addr()?, "msgline is serving");
        let pages = crate::console::router(state.clone()).merge(crate::mcp::router());
        let router = api::router(state.clone(), pages);
        let limits = crate::web::server::Limits::of(&state.sender.config);
        crate::web::server::serve(crate::web::listener::JsonErrorsListener(self.listener), router, limits, shutdown)
            .await;
        pruner.abort();
        let _ = stop_workers.send(true);
        for worker in workers {
            let _ = worker.await;
        }
        state.sender.db.close().await;
        Ok(())
    }
}

/// Builds what the server runs on, once: the send path (with the dispatcher's delivery of what
/// sends hand over installed in its seam), the API-key cache, the rate limits and the agents.
pub fn wire(db: Db, config: Config) -> anyhow::Result<Services> {
    let limits = Arc::new(match &config.redis_url {
        Some(url) => RateLimits::shared(config.rate_limit_per_minute, config.send_rate_limit_per_minute, url)?,
        None => RateLimits::new(config.rate_limit_per_minute, config.send_rate_limit_per_minute),
    });
    let auth = Arc::new(AuthCache::new(Duration::from_secs(config.key_cache_seconds)));
    let sender = Sender::new(db, config, limits.clone())?;
    crate::workers::dispatcher::take_handovers(&sender);
    let agents = Agents::new(sender.clone(), limits.clone());
    Ok(Services::new(sender, auth, limits, agents))
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}
