//! Cursor pages, newest first. Ids are time-ordered, so a page is `id < cursor ORDER BY id DESC`.

/// Which page of a list to read.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub limit: i64,
    /// Return rows whose id is below this one (the last id of the previous page).
    pub before: Option<String>,
}

/// One page of rows and the id to continue from, if there are more.
#[derive(Debug)]
pub struct Paged<T> {
    pub rows: Vec<T>,
    pub next: Option<String>,
}

impl<T> Paged<T> {
    /// Trims a fetch of `limit + 1` rows to `limit` and notes whether more follow.
    pub fn from_overfetch(mut rows: Vec<T>, limit: i64, id_of: impl Fn(&T) -> &str) -> Self {
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next = if more { rows.last().map(|r| id_of(r).to_string()) } else { None };
        Paged { rows, next }
    }
}

/// A newest-first list query: a base `SELECT ... WHERE <condition on $1>`, optional equality
/// filters added when a value is given, then the cursor, the order and the limit of one page.
pub struct ListQuery {
    sql: String,
    binds: Vec<String>,
}

impl ListQuery {
    /// `base` ends in a condition on `$1`, bound to `first`.
    pub fn new(base: impl Into<String>, first: &str) -> Self {
        Self { sql: base.into(), binds: vec![first.to_string()] }
    }

    /// `AND column = value`, when there is a value.
    pub fn eq(mut self, column: &str, value: Option<&str>) -> Self {
        if let Some(value) = value {
            self.binds.push(value.to_string());
            self.sql.push_str(&format!(" AND {column} = ${}", self.binds.len()));
        }
        self
    }

    /// [`ListQuery::fetch`] through [`super::Db::read_rows`].
    pub async fn fetch_rows<T: Send + 'static>(
        mut self,
        db: &super::Db,
        page: &Page,
        map: fn(&dyn super::Columns) -> sqlx::Result<T>,
        id_of: impl Fn(&T) -> &str,
    ) -> sqlx::Result<Paged<T>> {
        self.finish(page);
        let args = self.binds.into_iter().map(super::Arg::from).collect();
        let items = db.read_rows(self.sql, args, map).await?;
        Ok(Paged::from_overfetch(items, page.limit, id_of))
    }

    /// The cursor, the order and the limit.
    fn finish(&mut self, page: &Page) {
        if let Some(before) = &page.before {
            self.binds.push(before.clone());
            self.sql.push_str(&format!(" AND id < ${}", self.binds.len()));
        }
        self.sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", page.limit + 1));
    }

    pub async fn fetch<T>(
        mut self,
        db: &super::Db,
        page: &Page,
        map: impl Fn(&sqlx::any::AnyRow) -> sqlx::Result<T>,
        id_of: impl Fn(&T) -> &str,
    ) -> sqlx::Result<Paged<T>> {
        self.finish(page);
        let mut query = sqlx::query(&self.sql);
        for bind in &self.binds {
            query = query.bind(bind);
        }
        let rows = query.fetch_all(db.reader()).await?;
        let items = rows.iter().map(map).collect::<sqlx::Result<Vec<_>>>()?;
        Ok(Paged::from_overfetch(items, page.limit, id_of))
    }
}
