-- The message row is its own outbox: a message waiting to be sent or settled with its line
-- says so in outbox_state (pending: to send; claimed: a dispatcher is calling the line until
-- claimed_until; unknown: to ask the line about from available_at), and NULL once settled.
-- A send no longer inserts and later deletes a row of its own. Jobs of the old outbox table
-- carry over.
ALTER TABLE messages ADD COLUMN outbox_state TEXT;
ALTER TABLE messages ADD COLUMN outbox_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN available_at INTEGER;
ALTER TABLE messages ADD COLUMN claimed_until INTEGER;
UPDATE messages SET
    outbox_state = (SELECT o.state FROM outbox o WHERE o.message_id = messages.id),
    outbox_attempts = (SELECT o.attempts FROM outbox o WHERE o.message_id = messages.id),
    available_at = (SELECT o.available_at FROM outbox o WHERE o.message_id = messages.id),
    claimed_until = (SELECT o.claimed_until FROM outbox o WHERE o.message_id = messages.id)
WHERE id IN (SELECT message_id FROM outbox);
DROP TABLE outbox;
-- Only the few messages with work left are in the index.
CREATE INDEX messages_outbox ON messages (outbox_state, available_at) WHERE outbox_state IS NOT NULL;
