-- The message row is its own outbox: a message waiting to be sent or settled with its line
-- says so in outbox_state (pending: to send; claimed: a dispatcher is calling the line until
-- claimed_until; unknown: to ask the line about from available_at), and NULL once settled.
-- A send no longer inserts and later deletes a row of its own. Jobs of the old outbox table
-- carry over.
ALTER TABLE messages ADD COLUMN outbox_state TEXT;
ALTER TABLE messages ADD COLUMN outbox_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN available_at BIGINT;
ALTER TABLE messages ADD COLUMN claimed_until BIGINT;
UPDATE messages m SET outbox_state = o.state, outbox_attempts = o.attempts, available_at = o.available_at,
    claimed_until = o.claimed_until
FROM outbox o WHERE o.message_id = m.id;
DROP TABLE outbox;
-- Only the few messages with work left are in the index.
CREATE INDEX messages_outbox ON messages (outbox_state, available_at) WHERE outbox_state IS NOT NULL;
