-- The people who run msgline sign in to the console as staff of one organisation. A password is
-- stored only as an Argon2id hash (PHC string); a new member sets it through a one-time sign-in
-- link, whose token is stored only as a SHA-256. Removing someone keeps the row (removed_at) so
-- that what they did stays attributed, and ends their sessions.
CREATE TABLE staff (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs(id),
    email          TEXT NOT NULL,
    role           TEXT NOT NULL,
    password_hash  TEXT,
    link_hash      TEXT UNIQUE,
    link_expires_at INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    removed_at     INTEGER
);
-- One live account per email: sign-in is by email alone.
CREATE UNIQUE INDEX staff_by_email ON staff (email) WHERE removed_at IS NULL;
CREATE INDEX staff_by_org ON staff (org_id, id);

-- Console sessions, kept on the server: the cookie holds a random token, the row its SHA-256.
-- A session ends when signed out, when idle past its idle limit, at its absolute limit, or when
-- its staff member is removed or changes password (the row is deleted; every instance reads it).
CREATE TABLE staff_sessions (
    id            TEXT PRIMARY KEY,
    staff_id      TEXT NOT NULL REFERENCES staff(id),
    token_hash    TEXT NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL
);
CREATE INDEX staff_sessions_by_staff ON staff_sessions (staff_id);
CREATE INDEX staff_sessions_by_expiry ON staff_sessions (expires_at);

-- Failed sign-ins, counted per email and per client address over a window: the throttle reads
-- them on every instance. Old rows are pruned by the janitor.
CREATE TABLE sign_in_failures (
    subject     TEXT NOT NULL,
    failed_at   INTEGER NOT NULL
);
CREATE INDEX sign_in_failures_by_subject ON sign_in_failures (subject, failed_at);
