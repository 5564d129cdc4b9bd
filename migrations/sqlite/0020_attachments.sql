-- Attachments: files sent or received with a message. The bytes live in the media store
-- (MSGLINE_MEDIA_STORE) under `storage_key`; this row says whose they are.
CREATE TABLE attachments (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size          INTEGER NOT NULL,
    filename      TEXT,
    storage_key   TEXT NOT NULL,
    -- Its place among the message's attachments, from 0.
    position      INTEGER NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX attachments_by_message ON attachments (message_id);
