//! What several instances on one PostgreSQL tell each other: a key that was revoked or rotated
//! (`NOTIFY msgline_keys`), so that every instance refuses it at once instead of after its key
//! cache runs out, and a line whose health or policy changed (`NOTIFY msgline_lines`), so that
//! every instance reads it again at once instead of after its line cache runs out, and new
//! events of an organisation with an event feed (`NOTIFY msgline_feed`, from a trigger), so that
//! every instance's open feed streams look at once. Each instance
//! listens on one connection of its own, named [`LISTENER_NAME`]; those connections also tell how
//! many instances share the database, and an instance without Redis warns once when it is not
//! alone (its rate limits are its own).

use std::{str::FromStr, sync::Arc, time::Duration};

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::watch;

use super::pause;
use crate::{
    caller::AuthCache,
    db::{Backend, Db, dial_in, feed, keys, lines},
    send::Sender,
};

pub const LISTENER_NAME: &str = "msgline instance";

/// How often an instance counts the others.
const COUNT_EVERY: Duration = Duration::from_secs(30);
const FIRST_COUNT: Duration = Duration::from_secs(5);

pub async fn run(sender: Sender, auth: Arc<AuthCache>, mut shutdown: watch::Receiver<bool>) {
    let (db, config) = (&sender.db, &sender.config);
    if db.backend() != Backend::Postgres {
        return;
    }
    let options = match PgConnectOptions::from_str(&config.database_url) {
        Ok(options) => options.application_name(LISTENER_NAME),
        Err(error) => {
            tracing::warn!(error = %error, "cannot listen for key changes; other instances' revocations apply after the key cache time");
            return;
        }
    };
    let pool = PgPoolOptions::new().max_connections(1).connect_lazy_with(options);
    let mut warned = false;
    while !*shutdown.borrow() {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(error = %error, "cannot listen for key changes; trying again");
                if !pause(&mut shutdown, Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        if let Err(error) = listener.listen_all([keys::CHANNEL, lines::CHANNEL, feed::CHANNEL, dial_in::CHANNEL]).await
        {
            tracing::warn!(error = %error, "cannot listen for key changes; trying again");
            if !pause(&mut shutdown, Duration::from_secs(1)).await {
                break;
            }
            continue;
        }
        // Whatever changed while this instance was not listening is forgotten with the rest.
        forget_all(&sender, &auth);
        // The first count once the instances started together have had time to start.
        let mut count = tokio::time::interval_at(tokio::time::Instant::now() + FIRST_COUNT, COUNT_EVERY);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = count.tick() => {
                    if !warned && config.redis_url.is_none() {
                        warned = warn_if_not_alone(db).await;
                    }
                }
                notification = listener.try_recv() => match notification {
                    Ok(Some(notification)) if notification.channel() == lines::CHANNEL => {
                        // Read the line again, and let its pacer look (a resume elsewhere, the
                        // command line's included, sends what waited).
                        sender.lines.forget(notification.payload());
                        sender.dispatch.wake_pacer(notification.payload());
                    }
                    // New events of an organisation with a feed: its streams look.
                    Ok(Some(notification)) if notification.channel() == feed::CHANNEL => sender.feed.bump(),
                    // A send held for a dial-in phone: the instance holding its stream tells it.
                    Ok(Some(notification)) if notification.channel() == dial_in::CHANNEL => {
                        sender.lines.client().dial_in().queued().bump()
                    }
                    Ok(Some(notification)) => auth.forget(notification.payload()),
                    // The connection was lost and is made again on the next call: what was
                    // announced meanwhile is unknown, so nothing cached is trusted.
                    Ok(None) => forget_all(&sender, &auth),
                    Err(error) => {
                        tracing::warn!(error = %error, "lost the connection that hears of key and line changes");
                        forget_all(&sender, &auth);
                        break;
                    }
                },
            }
        }
        if !pause(&mut shutdown, Duration::from_secs(1)).await {
            break;
        }
    }
}

fn forget_all(sender: &Sender, auth: &AuthCache) {
    auth.clear();
    sender.lines.clear();
    sender.feed.bump();
    sender.lines.client().dial_in().queued().bump();
}

/// Warns (and answers `true`) when other instances listen on this database too.
async fn warn_if_not_alone(db: &Db) -> bool {
    let instances = keys::listening_instances(db, LISTENER_NAME).await;
    match instances {
        Ok(instances) if instances > 1 => {
            tracing::warn!(
                instances,
                "several msgline instances share this database but MSGLINE_REDIS_URL is not set: \
                 each instance enforces the rate limits on its own, so a caller gets them once per instance"
            );
            true
        }
        _ => false,
    }
}
