//! Group commit: writes that need nothing read back are queued to one task that
//! commits many of them in a single transaction, run as one multi-statement query. On a single
//! SQLite writer every round trip to the connection's thread costs about as much as a whole
//! small transaction, so sharing one round trip among many requests multiplies throughput.
//!
//! If a shared commit fails (one request's statement breaks a constraint), it is rolled back
//! and every request's batch is retried alone, so each gets its own answer.

use sqlx::{AnyPool, Executor};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, Batch};

/// Most requests one commit carries.
pub(super) const MAX_GROUP: usize = 256;

struct Job {
    batch: Batch,
    done: oneshot::Sender<sqlx::Result<()>>,
}

/// Committers working side by side (`lanes`: one on SQLite's single writer, several on
/// PostgreSQL), each taking whatever has queued for it since its last commit.
#[derive(Clone)]
pub struct GroupWriter {
    lanes: std::sync::Arc<Vec<mpsc::Sender<Job>>>,
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// On a SQLite file: the committer thread's queue of units of work.
    native: Option<mpsc::Sender<Box<dyn super::native::Unit>>>,
}

impl GroupWriter {
    /// One lane on SQLite's single writer, its statements run by a thread with its own
    /// connection to `file` (see [`super::native`]).
    pub fn start_sqlite(writer: AnyPool, file: &std::path::Path) -> anyhow::Result<Self> {
        let lane = super::native::start(writer, file, 4096)?;
        Ok(Self { lanes: Default::default(), next: Default::default(), native: Some(lane) })
    }

    pub fn start(writer: AnyPool, lanes: usize) -> Self {
        let lanes = (0..lanes.max(1))
            .map(|_| {
                let (jobs, rx) = mpsc::channel(4096);
                tokio::spawn(run(writer.clone(), rx));
                jobs
            })
            .collect();
        Self { lanes: std::sync::Arc::new(lanes), next: Default::default(), native: None }
    }

    /// The committer thread that [`GroupWriter::native`] runs units of work on: a SQLite file's.
    pub(super) fn native_lane(&self) -> Option<NativeLane<'_>> {
        self.native.as_ref().map(NativeLane)
    }

    /// Commits the batch (with others); returns when it is durable.
    pub async fn commit(&self, batch: Batch) -> sqlx::Result<()> {
        if let Some(lane) = self.native_lane() {
            return lane.run(move |conn| super::native::run_batch(conn, &batch)).await;
        }
        let (done, answer) = oneshot::channel();
        let lane = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.lanes.len();
        self.lanes[lane].send(Job { batch, done }).await.map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.map_err(|_| sqlx::Error::PoolClosed)?
    }
}

async fn run(writer: AnyPool, mut rx: mpsc::Receiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while rx.recv_many(&mut group, MAX_GROUP).await > 0 {
        let jobs: Vec<Job> = std::mem::take(&mut group);
        if let Err(error) = commit_group(&writer, jobs).await {
            tracing::error!(error = %error, "group commit failed");
        }
    }
}

async fn commit_group(writer: &AnyPool, jobs: Vec<Job>) -> sqlx::Result<()> {
    let mut conn = writer.acquire().await?;
    if Backend::of(&conn) == Backend::Postgres {
        return commit_group_postgres(&mut conn, jobs).await;
    }
    let mut combined = Batch::new();
    combined.push("BEGIN IMMEDIATE", Vec::new());
    for job in &jobs {
        combined.extend(&job.batch);
    }
    combined.push("COMMIT", Vec::new());
    match combined.execute(&mut conn).await {
        Ok(()) => {
            for job in jobs {
                let _ = job.done.send(Ok(()));
            }
        }
        Err(_) => {
            let _ = conn.execute("ROLLBACK").await;
            // One at a time, each in its own transaction, so that each request gets its answer.
            for job in jobs {
                let result = async {
                    let mut alone = Batch::new();
                    alone.push("BEGIN IMMEDIATE", Vec::new());
                    alone.extend(&job.batch);
                    alone.push("COMMIT", Vec::new());
                    let result = alone.execute(&mut conn).await;
                    if result.is_err() {
                        let _ = conn.execute("ROLLBACK").await;
                    }
                    result
                }
                .await;
                let _ = job.done.send(result);
            }
        }
    }
    Ok(())
}

/// On PostgreSQL many requests share one transaction and one commit, and a statement they all
/// repeat runs once for all of them (see [`super::merge`]); a failure aborts the transaction, so
/// each request is then retried alone.
async fn commit_group_postgres(conn: &mut sqlx::AnyConnection, jobs: Vec<Job>) -> sqlx::Result<()> {
    use sqlx::Connection;
    let shared = async {
        let mut tx = conn.begin().await?;
        let batches: Vec<&Batch> = jobs.iter().map(|job| &job.batch).collect();
        super::merge::execute(&mut tx, &batches).await?;
        tx.commit().await
    }
    .await;
    match shared {
        Ok(()) => {
            for job in jobs {
                let _ = job.done.send(Ok(()));
            }
            return Ok(());
        }
        Err(error) if jobs.len() > 1 => {
            tracing::debug!(error = %error, requests = jobs.len(), "a shared commit failed; its requests run one by one")
        }
        Err(_) => {}
    }
    for job in jobs {
        let result = async {
            let mut tx = conn.begin().await?;
            job.batch.execute(&mut tx).await?;
            tx.commit().await
        }
        .await;
        let _ = job.done.send(result);
    }
    Ok(())
}

/// SQLite's committer thread.
pub(super) struct NativeLane<'a>(&'a mpsc::Sender<Box<dyn super::native::Unit>>);

impl NativeLane<'_> {
    /// Runs `work` on the committer thread inside a shared commit, and returns its result once
    /// that commit is durable. A unit that fails is rolled back alone (to a savepoint), not with
    /// the others.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> sqlx::Result<T> {
        let (unit, answer) = super::native::unit(work);
        self.0.send(unit).await.map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.unwrap_or(Err(sqlx::Error::PoolClosed))
    }
}
