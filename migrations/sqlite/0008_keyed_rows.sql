-- Two small tables every message writes to, stored in their primary key's order (WITHOUT
-- ROWID): a row is then one B-tree entry instead of two (the table's rowid tree and its key's
-- index), for each insert, claim and removal of an outbox job and each status callback id.

CREATE TABLE outbox_keyed (
    message_id     TEXT PRIMARY KEY REFERENCES messages(id),
    line_id        TEXT NOT NULL REFERENCES lines(id),
    state          TEXT NOT NULL,
    attempts       INTEGER NOT NULL,
    available_at   INTEGER NOT NULL,
    claimed_until  INTEGER,
    created_at     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO outbox_keyed (message_id, line_id, state, attempts, available_at, claimed_until, created_at)
    SELECT message_id, line_id, state, attempts, available_at, claimed_until, created_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_keyed RENAME TO outbox;
CREATE INDEX outbox_ready ON outbox (state, available_at);

CREATE TABLE bridge_events_keyed (
    line_id      TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    received_at  INTEGER NOT NULL,
    PRIMARY KEY (line_id, event_id)
) WITHOUT ROWID;
INSERT INTO bridge_events_keyed (line_id, event_id, received_at)
    SELECT line_id, event_id, received_at FROM bridge_events;
DROP TABLE bridge_events;
ALTER TABLE bridge_events_keyed RENAME TO bridge_events;
