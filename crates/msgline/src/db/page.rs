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
