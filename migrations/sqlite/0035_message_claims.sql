-- PostgreSQL keeps the claim of a send that calls its line itself here (see its migration);
-- SQLite rewrites a row in place whatever an update changes, so its claims stay on the message
-- row and this table stays empty.
CREATE TABLE message_claims (
    message_id     TEXT PRIMARY KEY,
    claimed_until  INTEGER NOT NULL
);
