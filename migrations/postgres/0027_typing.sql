-- Who is typing in a conversation now, as the line last reported it: one row per conversation,
-- replaced by each report. The console shows it while `until_ms` is ahead and no message from
-- that person arrived since `since_ms`. A report with `typing: false` deletes the row.
CREATE TABLE conversation_typing (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id),
    org_id          TEXT NOT NULL,
    phone           TEXT NOT NULL,
    since_ms        BIGINT NOT NULL,
    until_ms        BIGINT NOT NULL
);
