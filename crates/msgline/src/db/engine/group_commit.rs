//! Group commit: writes that need nothing read back are queued to one task that
//! commits many of them in a single transaction, run as one multi-statement query. On a single
//! SQLite writer every round trip to the connection's thread costs about as much as a whole
//! small transaction, so sharing one round trip among many requests multiplies throughput.
//!
//! If a shared commit fails (one request's statement breaks a constraint), it is rolled back
//! and every request's batch is retried alone, so each gets its own answer.

use std::future::Future;

use sqlx::{AnyConnection, AnyPool, Executor};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, Batch, MAX_GROUP};

/// Every statement a PostgreSQL lane runs finds its rows by key (a merged statement joins its
/// rows to the table on the key). PostgreSQL keeps a prepared statement's generic plan until the
/// table is analysed again or the connection ends, and the plan it makes while a table is empty
/// or nearly so scans it: on a new database, a merged status move then read the whole
/// `messages` table once per message it moved (60,000 to 160,000 rows to move 8 messages in a
/// 20,000-row table, in `tests/api/plans.rs`). With sequential scans ruled out wherever an
/// index serves, the plan made on an empty table is the one a full table needs. Joins are
/// nested loops from the rows to the table for the same reason: once a table has statistics, a
/// merged update that ends outbox jobs (`outbox_state IS NOT NULL`) was planned as a scan of the
/// whole outbox index, with its entries for rows long settled, hashed against the rows. With the
/// plan settled by these rules, a statement is planned once per connection: left to choose,
/// PostgreSQL planned some merged statements again on every run (a tenth of a lane's time in
/// `perf`, its JSON parsed once more by the planner each time).
const LANE_SETTINGS: &str = "SET enable_seqscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off; \
                             SET plan_cache_mode = force_generic_plan";

/// Work a commit plans inside itself (on PostgreSQL): it reads what it needs after the commit's
/// batches, with the rows it reads locked, decides its writes from what it read, and answers.
/// Every unit of the kind in one commit is planned together. The engine knows no table: what
/// a unit reads and writes is its own (a line's status reports are one kind, in `reports`).
pub(in crate::db) trait InCommit: Send + Sync + Sized + 'static {
    /// What a unit's request is answered; a batch's request gets the default.
    type Answer: Default + Send + 'static;

    /// Plans `units` inside the commit on `conn`: per unit its answer, in order, and the writes.
    fn plan<'a>(
        conn: &'a mut AnyConnection,
        units: Vec<&'a Self>,
    ) -> impl Future<Output = sqlx::Result<(Vec<Self::Answer>, Vec<Batch>)>> + Send + 'a;
}

/// What a request asks of a commit.
enum Work<P> {
    Batch(Batch),
    /// Planned inside the commit ([`InCommit`]).
    Planned(P),
}

struct Job<P: InCommit> {
    work: Work<P>,
    done: oneshot::Sender<sqlx::Result<Outcome<P::Answer>>>,
}

/// How a commit answers a request.
#[derive(Debug)]
enum Outcome<A> {
    /// Its work is committed (a batch's with the default answer).
    Done(A),
    /// One of its batch's refusals found a row (see [`Batch::refuse_if_found`]): its `refused`,
    /// and nothing of the batch written.
    Refused(String),
}

/// Committers working side by side (`lanes`: one on SQLite's single writer, several on
/// PostgreSQL), each taking whatever has queued for it since its last commit. On PostgreSQL the
/// first lane alone moves existing messages (the dispatcher's outcomes, the lines' reports): two
/// transactions moving the same message would wait on each other's row locks, each through the
/// other's commit, and could deadlock; one lane runs them one commit after another.
pub struct GroupWriter<P: InCommit> {
    lanes: std::sync::Arc<Vec<mpsc::Sender<Job<P>>>>,
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// On a SQLite file: the committer thread's queue of units of work.
    native: Option<mpsc::Sender<Box<dyn super::native::Unit>>>,
}

impl<P: InCommit> Clone for GroupWriter<P> {
    fn clone(&self) -> Self {
        Self { lanes: self.lanes.clone(), next: self.next.clone(), native: self.native.clone() }
    }
}

impl<P: InCommit> GroupWriter<P> {
    /// One lane on SQLite's single writer, its statements run by a thread with its own
    /// connection to `file` (see [`super::native`]), with or without a checkpointer.
    pub fn start_sqlite(writer: AnyPool, file: &std::path::Path, checkpointer: bool) -> anyhow::Result<Self> {
        let lane = super::native::start(writer, file, 4096, checkpointer)?;
        Ok(Self { lanes: Default::default(), next: Default::default(), native: Some(lane) })
    }

    /// One lane on the server's runtime, committing through `writer`: an in-memory SQLite
    /// database's, which exists only on `writer`'s connection.
    pub fn start_in_memory(writer: AnyPool) -> Self {
        let (jobs, rx) = mpsc::channel(4096);
        tokio::spawn(run(writer, rx));
        Self::with_lanes(vec![jobs])
    }

    /// PostgreSQL's lanes, each on a thread of its own with its own connection to `url`. On the
    /// server's shared runtime a lane waiting for the database's answer was woken behind
    /// whatever requests had queued meanwhile, so the database sat idle inside an open
    /// transaction for as long; a thread of its own is woken by the system as soon as the
    /// answer comes.
    pub fn start_postgres(url: &str, lanes: usize) -> anyhow::Result<Self> {
        let lanes = (0..lanes.max(1))
            .map(|lane| {
                let (jobs, rx) = mpsc::channel(4096);
                let url = url.to_string();
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                std::thread::Builder::new().name(format!("pg-committer-{lane}")).spawn(move || {
                    runtime.block_on(async move {
                        // Made on this thread, so that its connection is served by this thread.
                        let writer = sqlx::any::AnyPoolOptions::new()
                            .max_connections(1)
                            .test_before_acquire(false)
                            .acquire_timeout(std::time::Duration::from_secs(30))
                            .after_connect(|conn, _| {
                                Box::pin(async move {
                                    conn.execute(sqlx::raw_sql(LANE_SETTINGS)).await?;
                                    Ok(())
                                })
                            })
                            .connect_lazy(&url);
                        match writer {
                            Ok(writer) => {
                                run(writer.clone(), rx).await;
                                writer.close().await;
                            }
                            Err(error) => tracing::error!(error = %error, "a committer cannot reach PostgreSQL"),
                        }
                    })
                })?;
                Ok(jobs)
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self::with_lanes(lanes))
    }

    fn with_lanes(lanes: Vec<mpsc::Sender<Job<P>>>) -> Self {
        Self { lanes: std::sync::Arc::new(lanes), next: Default::default(), native: None }
    }

    /// The committer thread that [`GroupWriter::native`] runs units of work on: a SQLite file's.
    pub(in crate::db) fn native_lane(&self) -> Option<NativeLane<'_>> {
        self.native.as_ref().map(NativeLane)
    }

    /// Commits the batch (with others); returns when it is durable. A batch that moves existing
    /// messages runs on the first lane, which moves messages; one that updates a contended row
    /// on the lane that row's key picks, so that batches meeting on it never wait on each
    /// other's commits; any other on any lane but the first, where there are others.
    pub async fn commit(&self, batch: Batch) -> sqlx::Result<()> {
        self.commit_on(self.lane_for(&batch), batch).await
    }

    /// Commits the batch (with others) unless one of its refusals finds a row: `None` when it is
    /// durable, else that row's `refused`, and nothing of it written. Each refusal is asked
    /// inside the commit, before the batch's statements: on SQLite's committer thread alone, on
    /// a PostgreSQL lane together with every other batch's of that commit.
    pub async fn commit_or_refuse(&self, batch: Batch) -> sqlx::Result<Option<String>> {
        if let Some(native) = self.native_lane() {
            return native.run(move |conn| super::native::run_refusable(conn, &batch)).await;
        }
        Ok(match self.send(self.lane_for(&batch), Work::Batch(batch)).await? {
            Outcome::Done(_) => None,
            Outcome::Refused(refused) => Some(refused),
        })
    }

    /// Where a batch commits (see [`GroupWriter::commit`]).
    fn lane_for(&self, batch: &Batch) -> usize {
        let others = self.lanes.len().saturating_sub(1);
        match (others, batch.hot_row()) {
            _ if batch.moves_messages() => 0,
            (0, _) => 0,
            (_, Some(key)) => 1 + (key % others as u64) as usize,
            _ => 1 + self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % others,
        }
    }

    /// On SQLite's committer thread if there is one, else on lane `lane`.
    async fn commit_on(&self, lane: usize, batch: Batch) -> sqlx::Result<()> {
        if let Some(native) = self.native_lane() {
            return native.run(move |conn| super::native::run_batch(conn, &batch)).await;
        }
        self.send(lane, Work::Batch(batch)).await.map(drop)
    }

    /// Plans `unit` inside a commit on PostgreSQL's lane that moves messages, and answers it.
    pub(in crate::db) async fn plan_in_commit(&self, unit: P) -> sqlx::Result<P::Answer> {
        match self.send(0, Work::Planned(unit)).await? {
            Outcome::Done(answer) => Ok(answer),
            Outcome::Refused(_) => unreachable!("planned work has no refusals"),
        }
    }

    async fn send(&self, lane: usize, work: Work<P>) -> sqlx::Result<Outcome<P::Answer>> {
        let (done, answer) = oneshot::channel();
        self.lanes[lane].send(Job { work, done }).await.map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.map_err(|_| sqlx::Error::PoolClosed)?
    }
}

async fn run<P: InCommit>(writer: AnyPool, mut rx: mpsc::Receiver<Job<P>>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while rx.recv_many(&mut group, MAX_GROUP).await > 0 {
        let jobs: Vec<Job<P>> = std::mem::take(&mut group);
        if let Err(error) = commit_group(&writer, jobs).await {
            tracing::error!(error = %error, "group commit failed");
        }
    }
}

async fn commit_group<P: InCommit>(writer: &AnyPool, jobs: Vec<Job<P>>) -> sqlx::Result<()> {
    let mut conn = writer.acquire().await?;
    if Backend::of(&conn) == Backend::Postgres {
        return commit_group_postgres(&mut conn, jobs).await;
    }
    fn batch<P: InCommit>(job: &Job<P>) -> &Batch {
        match &job.work {
            Work::Batch(batch) => batch,
            Work::Planned(_) => unreachable!("planned work runs on SQLite in its own transaction"),
        }
    }
    let mut combined = Batch::new();
    combined.push("BEGIN IMMEDIATE", Vec::new());
    for job in &jobs {
        combined.extend(batch(job));
    }
    combined.push("COMMIT", Vec::new());
    match combined.execute(&mut conn).await {
        Ok(()) => {
            for job in jobs {
                let _ = job.done.send(Ok(Outcome::Done(P::Answer::default())));
            }
        }
        Err(_) => {
            let _ = conn.execute("ROLLBACK").await;
            // One at a time, each in its own transaction, so that each request gets its answer.
            for job in jobs {
                let result = async {
                    let mut alone = Batch::new();
                    alone.push("BEGIN IMMEDIATE", Vec::new());
                    alone.extend(batch(&job));
                    alone.push("COMMIT", Vec::new());
                    let result = alone.execute(&mut conn).await;
                    if result.is_err() {
                        let _ = conn.execute("ROLLBACK").await;
                    }
                    result
                }
                .await;
                let _ = job.done.send(result.map(|()| Outcome::Done(P::Answer::default())));
            }
        }
    }
    Ok(())
}

/// On PostgreSQL many requests share one transaction and one commit, and a statement they all
/// repeat runs once for all of them (see [`super::merge`]); a failure aborts the transaction, so
/// each request is then retried alone.
async fn commit_group_postgres<P: InCommit>(conn: &mut AnyConnection, jobs: Vec<Job<P>>) -> sqlx::Result<()> {
    use sqlx::Connection;
    let shared = async {
        let mut tx = conn.begin().await?;
        let answers = run_postgres(&mut tx, &jobs).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(answers)
    }
    .await;
    match shared {
        Ok(answers) => {
            for (job, answer) in jobs.into_iter().zip(answers) {
                let _ = job.done.send(Ok(answer));
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
            let mut answers = run_postgres(&mut tx, std::slice::from_ref(&job)).await?;
            tx.commit().await?;
            Ok(answers.pop().unwrap_or(Outcome::Done(P::Answer::default())))
        }
        .await;
        let _ = job.done.send(result);
    }
    Ok(())
}

/// The jobs' work inside one transaction; per job, its answer.
async fn run_postgres<P: InCommit>(conn: &mut AnyConnection, jobs: &[Job<P>]) -> sqlx::Result<Vec<Outcome<P::Answer>>> {
    let planned: Vec<&P> = jobs
        .iter()
        .filter_map(|job| match &job.work {
            Work::Planned(unit) => Some(unit),
            Work::Batch(_) => None,
        })
        .collect();
    let batches: Vec<&Batch> = jobs
        .iter()
        .filter_map(|job| match &job.work {
            Work::Batch(batch) => Some(batch),
            Work::Planned(_) => None,
        })
        .collect();
    // The refusals first, so that nothing this commit writes is read by them; a refused batch
    // is left out of the commit. With no refusal staged this asks nothing.
    let mut refused = super::merge::refusals(conn, &batches).await?;
    let admitted: Vec<&Batch> = batches.iter().zip(&refused).filter(|(_, r)| r.is_none()).map(|(b, _)| *b).collect();
    super::merge::execute(conn, &admitted, super::merge::Lookup::Keyed).await?;
    // After the batches (the dispatcher's record of a line's answer may move a message a
    // line's reports are about): what is planned starts from where the rows stand.
    let (answers, writes) = P::plan(conn, planned).await?;
    super::merge::execute(conn, &writes.iter().collect::<Vec<_>>(), super::merge::Lookup::Keyed).await?;
    let mut answers = answers.into_iter();
    let mut refused = refused.iter_mut();
    Ok(jobs
        .iter()
        .map(|job| match job.work {
            Work::Batch(_) => match refused.next().and_then(Option::take) {
                Some(refused) => Outcome::Refused(refused),
                None => Outcome::Done(P::Answer::default()),
            },
            Work::Planned(_) => Outcome::Done(answers.next().unwrap_or_default()),
        })
        .collect())
}

/// SQLite's committer thread.
pub(in crate::db) struct NativeLane<'a>(&'a mpsc::Sender<Box<dyn super::native::Unit>>);

impl NativeLane<'_> {
    /// Runs `work` on the committer thread inside a shared commit, and returns its result once
    /// that commit is durable. A unit that fails is rolled back alone, not with the others; to
    /// that end `work` may be run again (after a rollback), so it must not act outside the
    /// database.
    pub(in crate::db) async fn run<T: Send + 'static>(
        &self,
        work: impl FnMut(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> sqlx::Result<T> {
        let (unit, answer) = super::native::unit(work);
        self.0.send(unit).await.map_err(|_| sqlx::Error::PoolClosed)?;
        answer.await.unwrap_or(Err(sqlx::Error::PoolClosed))
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, GroupWriter, InCommit, Job, Work, mpsc};

    /// No work planned in the commit: these tests route batches only.
    struct NothingPlanned;

    impl InCommit for NothingPlanned {
        type Answer = ();

        async fn plan(_: &mut sqlx::AnyConnection, units: Vec<&Self>) -> sqlx::Result<(Vec<Self::Answer>, Vec<Batch>)> {
            Ok((units.iter().map(|_| ()).collect(), Vec::new()))
        }
    }

    /// Which lane each batch reaches, its commit answered at once.
    async fn lanes_of(batches: Vec<Batch>) -> Vec<usize> {
        let (senders, mut receivers): (Vec<_>, Vec<_>) =
            (0..4).map(|_| mpsc::channel::<Job<NothingPlanned>>(64)).unzip();
        let writer = GroupWriter::with_lanes(senders);
        let mut lanes = Vec::new();
        for batch in batches {
            let commit = tokio::spawn({
                let writer = writer.clone();
                async move { writer.commit(batch).await }
            });
            let (lane, job) = loop {
                if let Some(found) =
                    receivers.iter_mut().enumerate().find_map(|(lane, rx)| rx.try_recv().ok().map(|job| (lane, job)))
                {
                    break found;
                }
                tokio::task::yield_now().await;
            };
            assert!(matches!(job.work, Work::Batch(_)));
            job.done.send(Ok(super::Outcome::Done(()))).unwrap();
            commit.await.unwrap().unwrap();
            lanes.push(lane);
        }
        lanes
    }

    #[tokio::test]
    async fn batches_meeting_on_a_hot_row_share_a_lane_and_others_spread_over_the_rest() {
        let hot = |key: &str| {
            let mut batch = Batch::new();
            batch.push("UPDATE webhooks SET failing_since = NULL WHERE id = $1", vec![key.into()]).mark_hot_row(key);
            batch
        };
        let plain = || {
            let mut batch = Batch::new();
            batch.push("INSERT INTO t (v) VALUES ($1)", vec![1.into()]);
            batch
        };
        let a = lanes_of((0..6).map(|_| hot("wh_a")).collect()).await;
        assert!(a.iter().all(|lane| *lane == a[0] && *lane != 0), "{a:?}");
        let b = lanes_of(vec![hot("wh_b")]).await;
        assert_ne!(b[0], 0);
        let spread = lanes_of((0..6).map(|_| plain()).collect()).await;
        assert!(!spread.contains(&0), "{spread:?}");
        assert_eq!(spread.iter().collect::<std::collections::HashSet<_>>().len(), 3, "{spread:?}");
    }
}
