//! Several statements in one round trip where the engine allows it. On SQLite every statement
//! is a hand-off to the connection's worker thread, and those hand-offs, not the statements,
//! cost the most; a batch runs as one multi-statement query (SQLite binds `$N` by number, so the
//! parameters are renumbered into one list). PostgreSQL runs the same statements one by one.

use sqlx::AnyConnection;

use std::{
    collections::HashMap,
    sync::{LazyLock, Mutex},
};

use super::Backend;

/// A parameter of a batched statement. Its order (texts before integers, then by value) is the
/// order merged statements lock rows in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Arg::Text(Some(value.to_string()))
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Arg::Text(Some(value))
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Arg::Text(Some(value.clone()))
    }
}

impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Self {
        Arg::Text(value)
    }
}

impl From<Option<&str>> for Arg {
    fn from(value: Option<&str>) -> Self {
        Arg::Text(value.map(str::to_string))
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Arg::Int(Some(value))
    }
}

impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Self {
        Arg::Int(value)
    }
}

#[derive(Debug, Default, Clone)]
pub struct Batch {
    statements: Vec<Statement>,
    /// Whether a statement changes messages that exist already (a status move, the end or next
    /// turn of an outbox job). Set by the `stage_` functions that write such statements; it
    /// tells [`super::Db::commit`] where the unit runs, so that callers never choose.
    moves_messages: bool,
    /// For a batch that updates a row many batches update (a webhook endpoint's failure
    /// streak), that row's key: such batches run on one PostgreSQL lane, one commit after
    /// another, instead of waiting on each other's row lock through each other's commits.
    hot_row: Option<u64>,
    /// Queries that, if one finds a row, refuse the whole batch before it writes anything (see
    /// [`Batch::refuse_if_found`]).
    refusals: Vec<(&'static str, Vec<Arg>)>,
}

/// One statement of a batch, its parameters `$1..$n` in the order of `args`.
#[derive(Debug, Clone)]
pub(in crate::db) struct Statement {
    pub sql: String,
    pub args: Vec<Arg>,
    /// For an insert that [`Batch::push_if_updated`] made wait for its update on SQLite (`sql`
    /// is then `INSERT … SELECT … WHERE changes() > 0 AND …`), the same insert without the
    /// `changes()` test: for a runner that counts the rows the update changed itself.
    pub if_changed: Option<String>,
    /// A query (`$1` bound to the argument) that must find a row for the statement to write
    /// anything, as the statement's own condition says too: SQLite's committer and a PostgreSQL
    /// commit ask it once per commit and skip the statement, unbound and unrun, when it finds
    /// none (a runner that does not ask runs the statement, whose condition then holds it).
    pub guard: Option<(&'static str, Arg)>,
    /// What runs instead when the guard finds no row: a statement and how many of `args`, from
    /// the first, it takes. Without it nothing runs.
    pub otherwise: Option<(String, usize)>,
    /// Whether running the statement again right after, with the same arguments, changes
    /// nothing more (an update that sets columns to its parameters or constants): sequences
    /// that repeat it with the same arguments may then run it once (see [`super::merge`]).
    pub repeatable: bool,
}

/// `$1, $2, …, $count`: the parameters of an `IN (…)` list.
pub(crate) fn placeholders(count: usize) -> String {
    (1..=count).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// A subquery of the texts in the JSON array bound to `$param`: an `IN` list of any length as
/// one statement, kept prepared, where a list of `$n` is a statement per length (and past
/// `MOST_CACHED_ARGS` on SQLite, parsed again on every call). On PostgreSQL through
/// `msgline_rows`, which tells the planner to expect one row, so that the plan looks the list's
/// rows up by key however small the tables were when it was made.
pub(crate) fn texts_of(backend: super::Backend, param: usize) -> String {
    match backend {
        super::Backend::Postgres => format!("SELECT r #>> '{{}}' FROM msgline_rows(${param}::json) AS r"),
        super::Backend::Sqlite => format!("SELECT value FROM json_each(${param})"),
    }
}

/// [`texts_of`] on a PostgreSQL commit lane, whose settings keep plans on the key whatever the
/// estimate (see `group_commit`): the list read as it is, without `msgline_rows`, a PL/pgSQL
/// function that runs a query of its own on every call.
pub(crate) fn lane_texts_of(param: usize) -> String {
    format!("SELECT json_array_elements_text(${param}::json)")
}

/// What [`Batch::push_rows_if_updated`]'s texts are built from (its functions by address).
#[derive(PartialEq, Eq, Hash)]
struct Shape {
    backend: Backend,
    update: String,
    update_args: usize,
    insert_into: String,
    count: usize,
    width: usize,
    select: usize,
    only_if: Option<usize>,
}

/// A cache for [`kept`], as a `static`.
pub(in crate::db) type Kept<K, V> = LazyLock<Mutex<HashMap<K, V>>>;

/// `build()`'s value for `key`, built the first time and kept in `cache`: for SQL texts that
/// hot paths build from one of a few shapes (a status move's, the insert that waits on it),
/// where building them a placeholder at a time cost more than the rest of staging. The keys are
/// bounded by the code's shapes; past 1,024 kept, new ones are built each time all the same.
pub(in crate::db) fn kept<K: std::hash::Hash + Eq, V: Clone>(
    cache: &Mutex<HashMap<K, V>>,
    key: K,
    build: impl FnOnce() -> V,
) -> V {
    const CAP: usize = 1024;
    if let Some(value) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return value.clone();
    }
    let value = build();
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() < CAP {
        cache.insert(key, value.clone());
    }
    value
}

/// The statement(s) of [`Batch::push_rows_if_updated`]: on SQLite the insert, waiting on
/// `changes()`, with the same insert without that test; on PostgreSQL one statement whose
/// update feeds the insert (and no second text).
#[allow(clippy::too_many_arguments)]
fn if_updated_sql(
    backend: Backend,
    update: &str,
    update_args: usize,
    insert_into: &str,
    count: usize,
    width: usize,
    select: fn(&[String]) -> String,
    only_if: Option<fn(&[String]) -> String>,
) -> (String, Option<String>) {
    // The placeholders of each row, the first numbered from `from`.
    let placeholders = |from: usize| {
        (0..count)
            .map(|row| (0..width).map(|i| format!("${}", from + row * width + i)).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    match backend {
        Backend::Sqlite => {
            let selects = |waits: bool| {
                let parts: Vec<String> = placeholders(1)
                    .iter()
                    .map(|p| {
                        let mut conditions: Vec<String> = Vec::new();
                        if waits {
                            conditions.push("changes() > 0".into());
                        }
                        conditions.extend(only_if.map(|only_if| only_if(p)));
                        match conditions.is_empty() {
                            true => format!("SELECT {}", select(p)),
                            false => format!("SELECT {} WHERE {}", select(p), conditions.join(" AND ")),
                        }
                    })
                    .collect();
                format!("{insert_into} {}", parts.join(" UNION ALL "))
            };
            match (only_if, placeholders(1).as_slice()) {
                // One row of VALUES, which SQLite writes without a statement journal (an
                // `INSERT … SELECT` into a table with a foreign key gets one).
                (None, [p]) => (selects(true), Some(format!("{insert_into} VALUES ({})", select(p)))),
                _ => (selects(true), Some(selects(false))),
            }
        }
        Backend::Postgres => {
            let parts: Vec<String> = placeholders(update_args + 1)
                .iter()
                .map(|p| {
                    let condition = only_if.map(|only_if| format!(" WHERE {}", only_if(p))).unwrap_or_default();
                    format!("SELECT {} FROM moved{condition}", select(p))
                })
                .collect();
            (format!("WITH moved AS ({update} RETURNING 1) {insert_into} {}", parts.join(" UNION ALL ")), None)
        }
    }
}

/// `$1`..`$n` in `sql` shifted by `offset`.
fn renumber(sql: &str, offset: usize) -> String {
    map_params(sql, |n| format!("${}", n + offset))
}

/// `sql` with each parameter `$N` replaced by `to(N)`.
pub(in crate::db) fn map_params(sql: &str, mut to: impl FnMut(usize) -> String) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            out.push_str(&to(digits.parse::<usize>().expect("digits")));
        } else {
            out.push(c);
        }
    }
    out
}

/// Binds `args` in order, on either driver's query.
pub(in crate::db) fn bind<'q, DB: sqlx::Database>(
    mut query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>,
    args: Vec<Arg>,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for arg in args {
        query = match arg {
            Arg::Text(value) => query.bind(value),
            Arg::Int(value) => query.bind(value),
        };
    }
    query
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a statement whose parameters are `$1..$n` in the order of `args`.
    pub fn push(&mut self, sql: impl Into<String>, args: Vec<Arg>) -> &mut Self {
        self.statements.push(Statement {
            sql: sql.into(),
            args,
            if_changed: None,
            guard: None,
            otherwise: None,
            repeatable: false,
        });
        self
    }

    /// [`Batch::push`] for a statement that running again right after, with the same
    /// arguments, changes nothing more (see [`Statement::repeatable`]).
    pub(in crate::db) fn push_repeatable(&mut self, sql: impl Into<String>, args: Vec<Arg>) -> &mut Self {
        self.push(sql, args);
        if let Some(last) = self.statements.last_mut() {
            last.repeatable = true;
        }
        self
    }

    /// Notes that the last statement writes nothing unless `sql`, with `$1` = `arg`, finds a row
    /// (see [`Statement::guard`]).
    pub(in crate::db) fn guard_last(&mut self, sql: &'static str, arg: Arg) -> &mut Self {
        if let Some(last) = self.statements.last_mut() {
            last.guard = Some((sql, arg));
        }
        self
    }

    /// [`Batch::guard_last`] for a statement that does more than the guarded write: where the
    /// guard finds no row, `otherwise` runs instead, with the first `args` of its arguments.
    pub(in crate::db) fn guard_last_or(
        &mut self,
        sql: &'static str,
        arg: Arg,
        otherwise: String,
        args: usize,
    ) -> &mut Self {
        if let Some(last) = self.statements.last_mut() {
            last.guard = Some((sql, arg));
            last.otherwise = Some((otherwise, args));
        }
        self
    }

    /// Stages `update` (parameters `$1..$n` from `update_args`) and, only if it changed a row
    /// and the condition `only_if` makes of the insert's placeholders holds, `insert_into`
    /// (`INSERT INTO table (columns)`) with the values `select` makes of the placeholders of
    /// `insert_args`: on SQLite by `changes()`, the rows the previous statement changed; on
    /// PostgreSQL as one statement whose update feeds the insert.
    #[allow(clippy::too_many_arguments)]
    pub fn push_if_updated(
        &mut self,
        backend: Backend,
        update: &str,
        update_args: Vec<Arg>,
        insert_into: &str,
        insert_args: Vec<Arg>,
        select: fn(&[String]) -> String,
        only_if: Option<fn(&[String]) -> String>,
    ) -> &mut Self {
        self.push_rows_if_updated(backend, update, update_args, insert_into, vec![insert_args], select, only_if)
    }

    /// [`Batch::push_if_updated`] with several rows to insert, each (the same number of
    /// arguments) inserted if the update changed a row and `only_if` holds for it. The rows are
    /// one statement: on SQLite `changes()` is still the update's while it runs.
    #[allow(clippy::too_many_arguments)]
    pub fn push_rows_if_updated(
        &mut self,
        backend: Backend,
        update: &str,
        update_args: Vec<Arg>,
        insert_into: &str,
        rows: Vec<Vec<Arg>>,
        select: fn(&[String]) -> String,
        only_if: Option<fn(&[String]) -> String>,
    ) -> &mut Self {
        let (count, width) = (rows.len(), rows.first().map_or(0, Vec::len));
        let shape = Shape {
            backend,
            update: update.to_string(),
            update_args: update_args.len(),
            insert_into: insert_into.to_string(),
            count,
            width,
            select: select as usize,
            only_if: only_if.map(|f| f as usize),
        };
        static BUILT: Kept<Shape, (String, Option<String>)> = LazyLock::new(Default::default);
        let (sql, if_changed) = kept(&BUILT, shape, || {
            if_updated_sql(backend, update, update_args.len(), insert_into, count, width, select, only_if)
        });
        let insert_args: Vec<Arg> = rows.into_iter().flatten().collect();
        match if_changed {
            Some(if_changed) => {
                self.push(update, update_args);
                self.statements.push(Statement {
                    sql,
                    args: insert_args,
                    if_changed: Some(if_changed),
                    guard: None,
                    otherwise: None,
                    repeatable: false,
                });
                self
            }
            None => {
                let mut args = update_args;
                args.extend(insert_args);
                self.push(sql, args)
            }
        }
    }

    /// Appends another batch's statements.
    pub fn extend(&mut self, other: &Batch) -> &mut Self {
        self.statements.extend(other.statements.iter().cloned());
        self.moves_messages |= other.moves_messages;
        self.hot_row = self.hot_row.or(other.hot_row);
        self
    }

    /// Refuses the batch, writing nothing of it, if `sql` (parameters `$1..$n` from `args`; one
    /// column, named `refused`) finds a row: [`super::Db::commit_or_refuse`] then answers that
    /// column. On SQLite's committer and PostgreSQL's lanes the query runs inside the commit,
    /// before the batch's statements (on PostgreSQL with the other batches' of the commit, as one
    /// statement), so nothing committed before it is missed; in memory it is read just before
    /// the commit.
    pub(in crate::db) fn refuse_if_found(&mut self, sql: &'static str, args: Vec<Arg>) -> &mut Self {
        self.refusals.push((sql, args));
        self
    }

    pub(in crate::db) fn refusals(&self) -> &[(&'static str, Vec<Arg>)] {
        &self.refusals
    }

    /// Notes that the batch updates the row `key` names, which many batches update (see
    /// [`Batch::hot_row`]).
    pub(in crate::db) fn mark_hot_row(&mut self, key: &str) -> &mut Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        self.hot_row = Some(hasher.finish());
        self
    }

    /// The hash of the contended row the batch updates, if any.
    pub(in crate::db) fn hot_row(&self) -> Option<u64> {
        self.hot_row
    }

    /// Notes that the batch changes existing messages (see [`Batch::moves_messages`]).
    pub(in crate::db) fn mark_moves_messages(&mut self) -> &mut Self {
        self.moves_messages = true;
        self
    }

    /// Whether the batch changes messages that exist already.
    pub(in crate::db) fn moves_messages(&self) -> bool {
        self.moves_messages
    }

    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    /// The statements, in order.
    pub(in crate::db) fn statements(&self) -> &[Statement] {
        &self.statements
    }

    pub async fn execute(self, conn: &mut AnyConnection) -> sqlx::Result<()> {
        match Backend::of(conn) {
            Backend::Sqlite => {
                let mut sql = String::new();
                let mut all = Vec::new();
                let several = self.statements.len() > 1;
                for statement in self.statements {
                    sql.push_str(&renumber(&statement.sql, all.len()));
                    sql.push_str(";\n");
                    all.extend(statement.args);
                }
                if !sql.is_empty() {
                    // Each combination is new text: preparing it once, not caching it, keeps the
                    // statement cache (and memory) for the statements that repeat.
                    bind(sqlx::query(&sql), all).persistent(!several).execute(&mut *conn).await?;
                }
            }
            Backend::Postgres => {
                for statement in self.statements {
                    bind(sqlx::query(&statement.sql), statement.args).execute(&mut *conn).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_shifted_past_the_earlier_statements() {
        assert_eq!(renumber("INSERT INTO t VALUES ($1, $2, $12)", 3), "INSERT INTO t VALUES ($4, $5, $15)");
        assert_eq!(renumber("SELECT 'a$b'", 3), "SELECT 'a$b'");
    }

    #[test]
    fn an_insert_follows_an_update_only_where_it_changed_a_row() {
        let args = || vec![Arg::from("a"), Arg::from(1)];
        let mut sqlite = Batch::new();
        sqlite.push_if_updated(
            Backend::Sqlite,
            "UPDATE t SET x = $1 WHERE y = $2",
            args(),
            "INSERT INTO u (a, b)",
            args(),
            |p| p.join(", "),
            Some(|p| format!("{} > 0", p[1])),
        );
        assert_eq!(sqlite.statements[1].sql, "INSERT INTO u (a, b) SELECT $1, $2 WHERE changes() > 0 AND $2 > 0");
        assert_eq!(sqlite.statements[1].if_changed.as_deref(), Some("INSERT INTO u (a, b) SELECT $1, $2 WHERE $2 > 0"));
        assert_eq!(sqlite.statements[0].if_changed, None);
        let mut postgres = Batch::new();
        postgres.push_if_updated(
            Backend::Postgres,
            "UPDATE t SET x = $1 WHERE y = $2",
            args(),
            "INSERT INTO u (a, b)",
            args(),
            |p| p.join(", "),
            Some(|p| format!("{} > 0", p[1])),
        );
        assert_eq!(
            postgres.statements[0].sql,
            "WITH moved AS (UPDATE t SET x = $1 WHERE y = $2 RETURNING 1) INSERT INTO u (a, b) SELECT $3, $4 FROM moved \
             WHERE $4 > 0"
        );
        assert_eq!(postgres.statements[0].args.len(), 4);
        assert_eq!(postgres.statements[0].if_changed, None);
    }

    #[test]
    fn several_rows_follow_one_update_in_one_statement() {
        let rows = || vec![vec![Arg::from("a")], vec![Arg::from("b")]];
        let condition: Option<fn(&[String]) -> String> = Some(|p| format!("{} <> ''", p[0]));
        let mut sqlite = Batch::new();
        sqlite.push_rows_if_updated(
            Backend::Sqlite,
            "UPDATE t SET x = 1 WHERE y = $1",
            vec![Arg::from("k")],
            "INSERT INTO u (a)",
            rows(),
            |p| p.join(", "),
            condition,
        );
        assert_eq!(
            sqlite.statements[1].sql,
            "INSERT INTO u (a) SELECT $1 WHERE changes() > 0 AND $1 <> '' UNION ALL SELECT $2 WHERE changes() > 0 AND $2 <> ''"
        );
        assert_eq!(
            sqlite.statements[1].if_changed.as_deref(),
            Some("INSERT INTO u (a) SELECT $1 WHERE $1 <> '' UNION ALL SELECT $2 WHERE $2 <> ''")
        );
        assert_eq!(sqlite.statements[1].args, vec![Arg::from("a"), Arg::from("b")]);
        let mut postgres = Batch::new();
        postgres.push_rows_if_updated(
            Backend::Postgres,
            "UPDATE t SET x = 1 WHERE y = $1",
            vec![Arg::from("k")],
            "INSERT INTO u (a)",
            rows(),
            |p| p.join(", "),
            condition,
        );
        assert_eq!(
            postgres.statements[0].sql,
            "WITH moved AS (UPDATE t SET x = 1 WHERE y = $1 RETURNING 1) INSERT INTO u (a) SELECT $2 FROM moved \
             WHERE $2 <> '' UNION ALL SELECT $3 FROM moved WHERE $3 <> ''"
        );
    }
}
