//! PostgreSQL answers one statement per round trip, and for the small statements a message is
//! made of the round trip and the executor's start cost far more than the row. When many
//! independent sequences of statements run in one transaction (the requests sharing a commit,
//! the reports of one callback), a statement that every sequence repeats is sent once, with all
//! its rows as one JSON parameter that is turned back into a table:
//!
//! - `INSERT INTO t (..) VALUES (..)` becomes `INSERT INTO t (..) SELECT .. FROM rows`;
//! - `DELETE FROM t WHERE ..` becomes `DELETE FROM t USING rows WHERE ..`;
//! - `UPDATE t SET .. WHERE ..` becomes `UPDATE t SET .. FROM rows WHERE ..`, but only where no
//!   two rows give the WHERE clause the same values (else the rows run one by one, in order);
//! - a conditional insert ([`super::Batch::push_if_updated`]) merges its update the same way and
//!   inserts from the rows that update moved.
//!
//! Sequences with the same statements in the same order run side by side, statement by
//! statement; such groups run in the order they first appear. The sequences are concurrent
//! requests none of which has been answered, so any order among them is one they might have run
//! in; the order within a sequence is kept. So no sequence may be planned from another's
//! writes: the moves of one message, whichever reports they come from, are one sequence. Every
//! write a merged statement makes is one its sequences would have made, and a statement that
//! fails fails the transaction, which the caller retries sequence by sequence.

use sqlx::AnyConnection;

use super::{Arg, Batch, batch::bind};

/// The alias of the rows table in a merged statement.
const ROWS: &str = "_m";

/// How a merged statement that looks rows up reads its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::db) enum Lookup {
    /// On a connection that may plan a scan: through `msgline_rows`, whose one-row estimate
    /// keeps the plan on the key.
    Estimated,
    /// On a commit lane, whose settings rule scans and hash and merge joins out (see
    /// `group_commit`): once, with `json_to_recordset`, as an insert reads them.
    Keyed,
}

/// A statement as it runs in one transaction: its text and arguments, or what runs instead of
/// it where its guard found no row (see `Statement::guard`).
struct Step<'a> {
    sql: &'a str,
    args: &'a [Arg],
    repeatable: bool,
}

/// Runs `sequences` (each a batch whose order matters) in the open transaction on `conn`.
pub(in crate::db) async fn execute(conn: &mut AnyConnection, sequences: &[&Batch], lookup: Lookup) -> sqlx::Result<()> {
    let found = guards(conn, sequences).await?;
    let steps: Vec<Vec<Step>> = sequences
        .iter()
        .map(|sequence| {
            let statements = sequence.statements().iter();
            statements
                .filter_map(|s| match &s.guard {
                    Some(guard) if !found.contains(&(guard.0, &guard.1)) => {
                        s.otherwise.as_ref().map(|(sql, n)| Step { sql, args: &s.args[..*n], repeatable: s.repeatable })
                    }
                    _ => Some(Step { sql: &s.sql, args: &s.args, repeatable: s.repeatable }),
                })
                .collect()
        })
        .collect();
    // Sequences by shape, in the order each shape first appears.
    let mut shapes: Vec<Vec<&[Step]>> = Vec::new();
    for sequence in &steps {
        let same = shapes.iter_mut().find(|group| same_shape(group[0], sequence));
        match same {
            Some(group) => group.push(sequence),
            None => shapes.push(vec![sequence]),
        }
    }
    for group in shapes {
        for position in 0..group[0].len() {
            let statements: Vec<&Step> = group.iter().map(|s| &s[position]).collect();
            let sql = statements[0].sql;
            let repeatable = statements.iter().all(|s| s.repeatable);
            let args: Vec<&[Arg]> = statements.iter().map(|s| s.args).collect();
            let merge = || merged(sql, &args, repeatable, lookup);
            match (statements.len() > 1).then(merge).flatten() {
                Some((merged_sql, json)) => {
                    sqlx::query(&merged_sql).bind(json).execute(&mut *conn).await?;
                }
                None => {
                    for statement in statements {
                        bind(sqlx::query(statement.sql), statement.args.to_vec()).execute(&mut *conn).await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The refusals of `sequences` (see [`Batch::refuse_if_found`]) asked in the open transaction,
/// before any of their statements: per sequence, the `refused` of its first refusal that finds a
/// row. Refusals with the same query are asked in one statement, which looks each row's
/// arguments up through a lateral join (by index, on a commit lane).
pub(in crate::db) async fn refusals(
    conn: &mut AnyConnection,
    sequences: &[&Batch],
) -> sqlx::Result<Vec<Option<String>>> {
    use sqlx::Row;
    // Every refusal as `[its number, ..its arguments]`, numbered in sequence order, so that the
    // lowest number found for a sequence is its first refusal.
    let mut asked: Vec<(usize, &str, Vec<Arg>)> = Vec::new();
    for (sequence, batch) in sequences.iter().enumerate() {
        for (sql, args) in batch.refusals() {
            let mut row = vec![Arg::Int(Some(asked.len() as i64))];
            row.extend(args.iter().cloned());
            asked.push((sequence, sql, row));
        }
    }
    let mut found: Vec<Option<(usize, String)>> = vec![None; sequences.len()];
    let mut queries: Vec<&str> = asked.iter().map(|(_, sql, _)| *sql).collect();
    queries.sort_unstable();
    queries.dedup();
    for query in queries {
        let rows: Vec<&[Arg]> = asked.iter().filter(|(_, sql, _)| *sql == query).map(|(_, _, row)| &row[..]).collect();
        let types: Vec<&'static str> = rows[0].iter().map(sql_type).collect();
        let numbered = |sql: &str| -> String { super::batch::map_params(sql, |n| format!("{ROWS}.a{}", n + 1)) };
        let mut hits: Vec<(i64, String)> = Vec::new();
        if rows.iter().all(|row| row.iter().map(sql_type).eq(types.iter().copied())) {
            let sql = format!(
                "SELECT {ROWS}.a1 AS n, _f.refused FROM {} CROSS JOIN LATERAL ({}) AS _f",
                insert_rows(&types),
                numbered(query)
            );
            for row in sqlx::query(&sql).bind(rows_json(rows.into_iter())).fetch_all(&mut *conn).await? {
                hits.push((row.try_get("n")?, row.try_get("refused")?));
            }
        } else {
            for row in rows {
                let refused = bind(sqlx::query(query), row[1..].to_vec()).fetch_optional(&mut *conn).await?;
                if let (Some(refused), Arg::Int(Some(n))) = (refused, &row[0]) {
                    hits.push((*n, refused.try_get("refused")?));
                }
            }
        }
        for (n, refused) in hits {
            let Some((sequence, _, _)) = usize::try_from(n).ok().and_then(|n| asked.get(n)) else { continue };
            let first = &mut found[*sequence];
            if first.as_ref().is_none_or(|(m, _)| (n as usize) < *m) {
                *first = Some((n as usize, refused));
            }
        }
    }
    Ok(found.into_iter().map(|hit| hit.map(|(_, refused)| refused)).collect())
}

/// The guards of the sequences' statements that find a row, each asked once in the transaction
/// (an organisation's webhook endpoint, asked for every event its messages' moves would write).
async fn guards<'a>(
    conn: &mut AnyConnection,
    sequences: &[&'a Batch],
) -> sqlx::Result<std::collections::HashSet<(&'static str, &'a Arg)>> {
    let mut asked = std::collections::HashSet::new();
    let mut found = std::collections::HashSet::new();
    for statement in sequences.iter().flat_map(|sequence| sequence.statements()) {
        if let Some((sql, arg)) = &statement.guard
            && asked.insert((*sql, arg))
            && bind(sqlx::query(sql), vec![arg.clone()]).fetch_optional(&mut *conn).await?.is_some()
        {
            found.insert((*sql, arg));
        }
    }
    Ok(found)
}

fn same_shape(a: &[Step], b: &[Step]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.sql == y.sql)
}

/// The merged statement and its one parameter (the rows as JSON), if `sql` has a merged form
/// and the rows' arguments (one list per sequence) agree in type. A `repeatable` statement (see
/// `Statement::repeatable`) runs once for rows whose arguments are all the same.
fn merged<'a>(sql: &str, rows: &[&'a [Arg]], repeatable: bool, lookup: Lookup) -> Option<(String, String)> {
    let types: Vec<&'static str> = rows[0].iter().map(sql_type).collect();
    if rows.iter().any(|args| args.len() != types.len() || args.iter().map(sql_type).ne(types.iter().copied())) {
        return None;
    }
    let form = form(sql, &types, lookup)?;
    let key_of = |args: &'a [Arg]| form.keys.iter().map(|&n| &args[n - 1]).collect::<Vec<_>>();
    let mut rows: Vec<(Vec<&Arg>, &[Arg])> = rows.iter().map(|args| (key_of(args), *args)).collect();
    // In key order, the order every merged statement locks rows in: two transactions never
    // wait on each other's rows in opposite orders.
    // A repeatable statement's rows that are the same come side by side, and run once each.
    rows.sort_by(|a, b| match repeatable {
        true => a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)),
        false => a.0.cmp(&b.0),
    });
    if repeatable {
        rows.dedup_by(|a, b| a.1 == b.1);
    }
    if let Some(equalities) = &form.one_row_each {
        // Some `column = $k` whose values all differ: no target row can match two rows.
        let all_differ = |k: &usize| {
            let mut seen = std::collections::HashSet::new();
            rows.iter().all(|(_, args)| seen.insert(&args[k - 1]))
        };
        if !equalities.iter().any(all_differ) {
            return None;
        }
    }
    Some((form.sql, rows_json(rows.into_iter().map(|(_, args)| args))))
}

fn sql_type(arg: &Arg) -> &'static str {
    match arg {
        Arg::Text(_) => "text",
        Arg::Int(_) => "bigint",
    }
}

/// `[{"a1": .., "a2": ..}, ..]`: the field `aN` is the row's `$N`. Written straight into the
/// text: a group's rows carry every message's body and event data, and building them as a JSON
/// tree first cost a tenth of the server's time on a send.
fn rows_json<'a>(rows: impl Iterator<Item = &'a [Arg]>) -> String {
    use std::io::Write;
    let mut out = Vec::with_capacity(1024);
    out.push(b'[');
    for (r, args) in rows.enumerate() {
        out.extend_from_slice(if r == 0 { b"{" } else { b",{" });
        for (i, arg) in args.iter().enumerate() {
            let written = write!(out, "{}\"a{}\":", if i == 0 { "" } else { "," }, i + 1).and_then(|()| match arg {
                Arg::Text(Some(value)) => serde_json::to_writer(&mut out, value).map_err(std::io::Error::from),
                Arg::Int(Some(value)) => write!(out, "{value}"),
                Arg::Text(None) | Arg::Int(None) => out.write_all(b"null"),
            });
            written.expect("writing to memory does not fail");
        }
        out.push(b'}');
    }
    out.push(b']');
    String::from_utf8(out).expect("JSON written from strings is UTF-8")
}

/// A statement's merged form.
#[derive(Debug, PartialEq)]
struct Form {
    sql: String,
    /// The parameters its WHERE clause reads (rows run in their order).
    keys: Vec<usize>,
    /// For an update, which PostgreSQL applies once per target row whatever the number of rows
    /// that match it: the `$k` of its WHERE clause's `column = $k`, one of which must differ
    /// between all rows for the update to be merged.
    one_row_each: Option<Vec<usize>>,
}

/// The rows of `$1` as a table `_m(a1 text, ..)` to look rows up from. `msgline_rows` (a
/// migration's) tells the planner to expect one row, so that each is looked up by index, in the
/// order given; on a commit lane the settings see to that, and the rows are read once.
fn rows_table(types: &[&str], lookup: Lookup) -> String {
    match lookup {
        Lookup::Estimated => {
            format!("msgline_rows($1::json) AS _r(j), json_to_record(_r.j) AS {ROWS}({})", columns(types))
        }
        Lookup::Keyed => insert_rows(types),
    }
}

/// The rows of `$1` as a table `_m(a1 text, ..)` for an insert, which looks nothing up: one
/// reading of the JSON, where [`rows_table`] reads it whole and then each row again (in `psql`,
/// 128,000 rows of 16 fields: 5.2 µs a row against 7.3).
fn insert_rows(types: &[&str]) -> String {
    format!("json_to_recordset($1::json) AS {ROWS}({})", columns(types))
}

/// `a1 text, a2 bigint, ..`: the columns of the rows table, `aN` for `$N`.
fn columns(types: &[&str]) -> String {
    types.iter().enumerate().map(|(i, t)| format!("a{} {t}", i + 1)).collect::<Vec<_>>().join(", ")
}

/// `sql` with each `$N` replaced by `prefix.aN`.
fn from_rows(sql: &str, prefix: &str) -> String {
    super::batch::map_params(sql, |n| format!("{prefix}.a{n}"))
}

/// The `$N` that `sql` reads.
fn params(sql: &str) -> Vec<usize> {
    let mut found = Vec::new();
    super::batch::map_params(sql, |n| {
        found.push(n);
        String::new()
    });
    found
}

fn form(sql: &str, types: &[&str], lookup: Lookup) -> Option<Form> {
    if let Some(rest) = sql.strip_prefix("WITH moved AS (")
        && let Some((update, insert)) = rest.split_once(" RETURNING 1) ")
    {
        let (set, condition) = split_update(update)?;
        let at = top_level(insert, " FROM moved")?;
        let (insert, tail) = (&insert[..at], &insert[at + " FROM moved".len()..]);
        let sql = format!(
            "WITH moved AS ({} FROM {} WHERE {} RETURNING {ROWS}.*) {} FROM moved{}",
            from_rows(set, ROWS),
            rows_table(types, lookup),
            from_rows(condition, ROWS),
            from_rows(insert, "moved"),
            from_rows(tail, "moved"),
        );
        return Some(Form { sql, keys: params(condition), one_row_each: Some(equalities(condition)) });
    }
    if sql.starts_with("INSERT INTO ")
        && top_level(sql, " VALUES (").is_none()
        && let Some(at) = top_level(sql, " SELECT ")
    {
        // `INSERT INTO t (..) SELECT <row> WHERE <condition>`: one row if the condition holds.
        let (head, rest) = (&sql[..at], &sql[at + " SELECT ".len()..]);
        let (row, condition) = match top_level(rest, " WHERE ") {
            Some(at) => (&rest[..at], Some(&rest[at + " WHERE ".len()..])),
            None => (rest, None),
        };
        if [" FROM ", " ON CONFLICT ", " RETURNING "].iter().any(|word| top_level(rest, word).is_some()) {
            return None;
        }
        let condition = condition.map(|c| format!(" WHERE {}", from_rows(c, ROWS))).unwrap_or_default();
        let sql = format!("{head} SELECT {} FROM {}{condition}", from_rows(row, ROWS), insert_rows(types));
        return Some(Form { sql, keys: Vec::new(), one_row_each: None });
    }
    if sql.starts_with("INSERT INTO ") {
        let open = top_level(sql, " VALUES (")? + " VALUES ".len();
        let close = closing(sql, open)?;
        let (head, tuple, tail) = (&sql[..open - " VALUES ".len()], &sql[open + 1..close], &sql[close + 1..]);
        if tail.trim_start().starts_with(',') || tail.contains('$') {
            return None;
        }
        let sql = format!("{head} SELECT {} FROM {}{tail}", from_rows(tuple, ROWS), insert_rows(types));
        return Some(Form { sql, keys: Vec::new(), one_row_each: None });
    }
    if sql.starts_with("DELETE FROM ") {
        let at = top_level(sql, " WHERE ")?;
        let condition = &sql[at + 7..];
        let sql = format!("{} USING {} WHERE {}", &sql[..at], rows_table(types, lookup), from_rows(condition, ROWS));
        return Some(Form { sql, keys: params(condition), one_row_each: None });
    }
    if sql.starts_with("UPDATE ") && top_level(sql, " RETURNING ").is_none() {
        let (set, condition) = split_update(sql)?;
        let sql =
            format!("{} FROM {} WHERE {}", from_rows(set, ROWS), rows_table(types, lookup), from_rows(condition, ROWS));
        return Some(Form { sql, keys: params(condition), one_row_each: Some(equalities(condition)) });
    }
    None
}

/// The `$k` that `condition` compares a column with (`column = $k`).
fn equalities(condition: &str) -> Vec<usize> {
    condition
        .match_indices(" = $")
        .filter_map(|(at, _)| {
            let at = at + 1;
            let digits: String = condition[at + 3..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// An update's `UPDATE t SET ..` and its condition.
fn split_update(sql: &str) -> Option<(&str, &str)> {
    let at = top_level(sql, " WHERE ")?;
    let set = &sql[..at];
    (!set.contains(" FROM ")).then_some((set, &sql[at + 7..]))
}

/// The first `needle` in `sql` outside quotes and parentheses.
fn top_level(sql: &str, needle: &str) -> Option<usize> {
    let (mut depth, mut quoted) = (0i32, false);
    for (i, c) in sql.char_indices() {
        if !quoted && depth == 0 && sql[i..].starts_with(needle) {
            return Some(i);
        }
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The `)` that closes the `(` at `open`.
fn closing(sql: &str, open: usize) -> Option<usize> {
    top_level(&sql[open + 1..], ")").map(|at| open + 1 + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_insert_selects_its_values_from_the_rows() {
        let insert = form(
            "INSERT INTO outbox (message_id, state, available_at, created_at) VALUES ($1, 'pending', $2, $2)",
            &["text", "bigint"],
            Lookup::Estimated,
        )
        .unwrap();
        assert_eq!(
            insert.sql,
            "INSERT INTO outbox (message_id, state, available_at, created_at) SELECT _m.a1, 'pending', _m.a2, _m.a2 \
             FROM json_to_recordset($1::json) AS _m(a1 text, a2 bigint)"
        );
        assert!(insert.keys.is_empty());
        let conflict = form_of("INSERT INTO b (l, e) VALUES ($1, $2) ON CONFLICT (l, e) DO NOTHING");
        assert!(conflict.sql.ends_with("AS _m(a1 text, a2 text) ON CONFLICT (l, e) DO NOTHING"));
        // Several rows already, or parameters after the values: left alone.
        assert_eq!(form("INSERT INTO t (a) VALUES ($1), ($2)", &["text", "text"], Lookup::Estimated), None);
        assert_eq!(
            form(
                "INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET b = $2",
                &["text", "text"],
                Lookup::Estimated
            ),
            None
        );
    }

    fn form_of(sql: &str) -> Form {
        let types = vec!["text"; params(sql).into_iter().max().unwrap_or(0)];
        form(sql, &types, Lookup::Estimated).unwrap()
    }

    #[test]
    fn updates_and_deletes_join_the_rows_and_an_update_names_its_keys() {
        let update = form_of("UPDATE conversations SET last_message_at = $1 WHERE id = $2");
        assert_eq!(
            update.sql,
            "UPDATE conversations SET last_message_at = _m.a1 FROM msgline_rows($1::json) AS _r(j), json_to_record(_r.j) AS _m(a1 text, a2 text) \
             WHERE id = _m.a2"
        );
        assert_eq!((update.keys, update.one_row_each), (vec![2], Some(vec![2])));
        // On a commit lane the rows are read once, as an insert reads them.
        let keyed =
            form("UPDATE conversations SET last_message_at = $1 WHERE id = $2", &["bigint", "text"], Lookup::Keyed);
        assert_eq!(
            keyed.unwrap().sql,
            "UPDATE conversations SET last_message_at = _m.a1 FROM json_to_recordset($1::json) AS _m(a1 bigint, a2 text) \
             WHERE id = _m.a2"
        );
        let delete = form_of("DELETE FROM outbox WHERE message_id = $1");
        assert_eq!((delete.keys.clone(), delete.one_row_each), (vec![1], None));
        assert_eq!(
            delete.sql,
            "DELETE FROM outbox USING msgline_rows($1::json) AS _r(j), json_to_record(_r.j) AS _m(a1 text) WHERE message_id = _m.a1"
        );
        let moved = form_of(
            "WITH moved AS (UPDATE m SET s = $1 WHERE id = $2 AND s IN ('a', 'b') RETURNING 1) \
             INSERT INTO e (id, m) SELECT $3, $2 FROM moved",
        );
        assert_eq!(
            moved.sql,
            "WITH moved AS (UPDATE m SET s = _m.a1 FROM msgline_rows($1::json) AS _r(j), json_to_record(_r.j) AS _m(a1 text, a2 text, a3 text) \
             WHERE id = _m.a2 AND s IN ('a', 'b') RETURNING _m.*) INSERT INTO e (id, m) SELECT moved.a3, moved.a2 FROM moved"
        );
        assert_eq!((moved.keys, moved.one_row_each), (vec![2], Some(vec![2])));
        let kept = form_of(
            "WITH moved AS (UPDATE m SET s = $1 WHERE id = $2 RETURNING 1) \
             INSERT INTO e (id, o) SELECT $3, $4 FROM moved WHERE EXISTS (SELECT 1 FROM w WHERE w.o = $4)",
        );
        assert!(
            kept.sql.ends_with(
                "INSERT INTO e (id, o) SELECT moved.a3, moved.a4 FROM moved WHERE EXISTS (SELECT 1 FROM w WHERE w.o = moved.a4)"
            ),
            "{}",
            kept.sql
        );
    }

    #[test]
    fn an_update_feeding_several_inserted_rows_inserts_each_from_the_rows_it_moved() {
        let moved = form_of(
            "WITH moved AS (UPDATE m SET s = $1 WHERE id = $2 RETURNING 1) INSERT INTO e (id, m) SELECT $3, $2 FROM moved \
             WHERE $3 <> '' UNION ALL SELECT $4, $2 FROM moved WHERE $4 <> ''",
        );
        assert!(
            moved.sql.ends_with(
                "INSERT INTO e (id, m) SELECT moved.a3, moved.a2 FROM moved WHERE moved.a3 <> '' \
                 UNION ALL SELECT moved.a4, moved.a2 FROM moved WHERE moved.a4 <> ''"
            ),
            "{}",
            moved.sql
        );
        assert_eq!((moved.keys, moved.one_row_each), (vec![2], Some(vec![2])));
    }

    #[test]
    fn a_conditional_insert_selects_its_rows_where_the_condition_holds() {
        let insert =
            form_of("INSERT INTO e (id, o) SELECT $1, (SELECT 2 FROM x) WHERE EXISTS (SELECT 1 FROM w WHERE w.o = $2)");
        assert_eq!(
            insert.sql,
            "INSERT INTO e (id, o) SELECT _m.a1, (SELECT 2 FROM x) FROM json_to_recordset($1::json) \
             AS _m(a1 text, a2 text) WHERE EXISTS (SELECT 1 FROM w WHERE w.o = _m.a2)"
        );
        // A select from a table of its own is left alone.
        assert_eq!(form("INSERT INTO e (id) SELECT id FROM t WHERE id = $1", &["text"], Lookup::Estimated), None);
    }

    #[test]
    fn rows_are_written_as_json_with_texts_escaped_and_nulls_kept() {
        let rows = [
            vec![Arg::from("say \"hi\"\n\u{e9}\u{1f600}"), Arg::Int(Some(-7)), Arg::Text(None)],
            vec![Arg::from("\\"), Arg::Int(None), Arg::from("")],
        ];
        let json = rows_json(rows.iter().map(Vec::as_slice));
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!([
                {"a1": "say \"hi\"\n\u{e9}\u{1f600}", "a2": -7, "a3": null},
                {"a1": "\\", "a2": null, "a3": ""},
            ])
        );
        assert_eq!(rows_json(std::iter::empty()), "[]");
    }

    #[test]
    fn updates_that_would_meet_on_a_row_are_not_merged() {
        let sql = "UPDATE c SET at = $1 WHERE id = $2";
        let a: &[Arg] = &[Arg::from(1), Arg::from("c1")];
        let b: &[Arg] = &[Arg::from(2), Arg::from("c2")];
        let c: &[Arg] = &[Arg::from(3), Arg::from("c1")];
        // In key order, whatever order they came in.
        let (_, json) = merged(sql, &[b, a], false, Lookup::Estimated).unwrap();
        assert_eq!(json, r#"[{"a1":1,"a2":"c1"},{"a1":2,"a2":"c2"}]"#);
        assert_eq!(merged(sql, &[a, b, c], false, Lookup::Estimated), None);
        // Arguments of different types at one position: left alone.
        let d: &[Arg] = &[Arg::from("x"), Arg::from("c3")];
        assert_eq!(merged(sql, &[a, d], false, Lookup::Estimated), None);
        // The row is named by `id = $2`: a guard on `$1` does not make two rows for one target
        // row distinct, and an update without an equality is never merged.
        let guarded = "UPDATE c SET at = $1 WHERE id = $2 AND (at IS NULL OR at < $1)";
        assert_eq!(merged(guarded, &[a, c], false, Lookup::Estimated), None);
        assert!(merged(guarded, &[a, b], false, Lookup::Estimated).is_some());
        let unkeyed = "UPDATE c SET at = $1 WHERE at <= $2";
        assert_eq!(merged(unkeyed, &[a, b], false, Lookup::Estimated), None);
    }

    #[test]
    fn a_repeatable_update_runs_once_for_rows_that_are_the_same() {
        let sql = "UPDATE w SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL";
        let (a, b): (&[Arg], &[Arg]) = (&[Arg::from("w1")], &[Arg::from("w2")]);
        // Not marked: rows that name one row run one by one.
        assert_eq!(merged(sql, &[a, a], false, Lookup::Keyed), None);
        // Marked: once per distinct row, in key order.
        let (_, json) = merged(sql, &[a, b, a, a], true, Lookup::Keyed).unwrap();
        assert_eq!(json, r#"[{"a1":"w1"},{"a1":"w2"}]"#);
        // Rows that name one row with different arguments still run one by one.
        let set = "UPDATE c SET at = $1 WHERE id = $2";
        let (c, d): (&[Arg], &[Arg]) = (&[Arg::from(1), Arg::from("c1")], &[Arg::from(2), Arg::from("c1")]);
        assert_eq!(merged(set, &[c, d, c], true, Lookup::Keyed), None);
        assert!(merged(set, &[c, c], true, Lookup::Keyed).is_some());
    }
}
