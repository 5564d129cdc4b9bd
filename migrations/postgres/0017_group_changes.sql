-- Changes to a group after its creation: a rename, participants added and removed, or the line
-- leaving the group. Each is pending while the line is called, then applied, failed, or unknown
-- until the line is asked.
CREATE TABLE group_changes (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    group_id      TEXT NOT NULL,
    line_id       TEXT NOT NULL,
    -- The new name ('' removes it); NULL when the change leaves the name alone.
    name          TEXT,
    -- JSON arrays of E.164 numbers.
    add_phones    TEXT NOT NULL,
    remove_phones TEXT NOT NULL,
    -- 1: the line leaves the group.
    leave_group   BIGINT NOT NULL DEFAULT 0,
    state         TEXT NOT NULL,
    error         TEXT,
    -- When an unknown change is next asked about.
    next_ask_at   BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX group_changes_by_group ON group_changes (group_id, id);
CREATE INDEX group_changes_unknown ON group_changes (state, next_ask_at);
