-- SMS fallback. An iMessage sent with `fallback: "sms"` (or under the organisation's default)
-- is watched (`fallback = 'sms'`) until it is delivered, or fails or is still undelivered at
-- `fallback_at`: then one SMS with the same text is written (`fallback_for` = the iMessage) and
-- the iMessage points at it (`fallback_message_id`). The decision clears `fallback`, in the
-- same transaction: the watch list (its partial index) holds only messages still in question.
ALTER TABLE messages ADD COLUMN fallback TEXT;
ALTER TABLE messages ADD COLUMN fallback_at BIGINT;
ALTER TABLE messages ADD COLUMN fallback_for TEXT;
ALTER TABLE messages ADD COLUMN fallback_message_id TEXT;
CREATE INDEX messages_fallback_watch ON messages (id) WHERE fallback = 'sms';
-- The organisation's default for sends that do not say (`sms` or NULL: none).
ALTER TABLE orgs ADD COLUMN default_fallback TEXT;
