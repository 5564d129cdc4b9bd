//! The opt-out check of every send, on PostgreSQL asked for many sends at once. Each check alone
//! was a round trip of its own, one per send, and its statement's start and end cost the
//! database more than the lookup: about a tenth of the machine in the `send` bench went to the
//! readers answering them. Checks that arrive while earlier ones are being asked wait for the
//! next statement, which asks them all; with [`IN_FLIGHT`] statements at once, an idle server
//! asks each check as it comes.

use std::sync::Arc;

use sqlx::Row;
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Most checks one statement asks.
const MAX_GROUP: usize = 256;
/// Statements asked at once.
const IN_FLIGHT: usize = 2;

/// For each row `(i, org, line, phone)`, whether the number is opted out: `i` and the phone of
/// each row that is. One index lookup per row, as the single check made it (a subquery per row,
/// whatever the estimate of the rows).
const GROUP_SQL: &str = "SELECT w.i, w.p FROM json_to_recordset($1::json) AS w(i bigint, o text, l text, p text) \
     WHERE (SELECT 1 FROM opt_outs x WHERE x.org_id = w.o AND x.line_id = w.l AND x.phone = w.p) = 1";

struct Check {
    org_id: String,
    line_id: String,
    phones: Vec<String>,
    /// The answer, or `None` if the grouped statement failed.
    answer: oneshot::Sender<Option<Option<String>>>,
}

/// The queue of checks to the task that asks them.
#[derive(Clone)]
pub(super) struct Checks(mpsc::Sender<Check>);

impl Checks {
    pub(super) fn start(readers: sqlx::PgPool) -> Self {
        let (checks, rx) = mpsc::channel(4096);
        tokio::spawn(run(readers, rx));
        Self(checks)
    }

    /// The first of `phones` opted out of the organisation's messages on the line, if any;
    /// `None` when the statement that asked it failed (the caller then asks it alone).
    pub(super) async fn first_opted_out(
        &self,
        org_id: &str,
        line_id: &str,
        phones: &[&str],
    ) -> sqlx::Result<Option<Option<String>>> {
        let (answer, answered) = oneshot::channel();
        let check = Check {
            org_id: org_id.to_string(),
            line_id: line_id.to_string(),
            phones: phones.iter().map(|p| p.to_string()).collect(),
            answer,
        };
        self.0.send(check).await.map_err(|_| sqlx::Error::PoolClosed)?;
        answered.await.map_err(|_| sqlx::Error::PoolClosed)
    }
}

async fn run(readers: sqlx::PgPool, mut rx: mpsc::Receiver<Check>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let mut group = Vec::new();
        if rx.recv_many(&mut group, MAX_GROUP).await == 0 {
            return;
        }
        let readers = readers.clone();
        tokio::spawn(async move {
            answer(&readers, group).await;
            drop(slot);
        });
    }
}

#[derive(serde::Serialize)]
struct Wanted<'a> {
    i: usize,
    o: &'a str,
    l: &'a str,
    p: &'a str,
}

async fn answer(readers: &sqlx::PgPool, group: Vec<Check>) {
    let wanted: Vec<Wanted> = group
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.phones.iter().map(move |p| Wanted { i, o: &c.org_id, l: &c.line_id, p }))
        .collect();
    let rows = serde_json::to_string(&wanted).expect("strings serialise");
    let found = sqlx::query(GROUP_SQL).bind(rows).fetch_all(readers).await.and_then(|rows| {
        let mut hits: Vec<Option<String>> = vec![None; group.len()];
        for row in rows {
            let i: i64 = row.try_get(0)?;
            let phone: String = row.try_get(1)?;
            if let Some(hit) = usize::try_from(i).ok().and_then(|i| hits.get_mut(i)) {
                hit.get_or_insert(phone);
            }
        }
        Ok(hits)
    });
    let mut hits = found.ok().map(Vec::into_iter);
    for check in group {
        let _ = check.answer.send(hits.as_mut().map(|hits| hits.next().flatten()));
    }
}
