-- A send's idempotency record lives on the message it made: the key (scoped by route, as
-- "<path> <key>"), the request's fingerprint, what the answer carried beside the message (a
-- contact card, a poll) and when the key expires. The answer is the message as it was
-- accepted, so no copy of it is kept. Records of earlier sends carry over; other routes' keys
-- (group creation) stay in idempotency_keys.
ALTER TABLE messages ADD COLUMN idem_key TEXT;
ALTER TABLE messages ADD COLUMN idem_fingerprint TEXT;
ALTER TABLE messages ADD COLUMN idem_extra TEXT;
ALTER TABLE messages ADD COLUMN idem_expires_at BIGINT;
UPDATE messages m SET
    idem_key = k.path || ' ' || k.idem_key,
    idem_fingerprint = k.fingerprint,
    idem_extra = NULLIF(((k.response_body::jsonb) - 'message' - 'duplicate' - 'delivery_unknown')::text, '{}'),
    idem_expires_at = k.expires_at
FROM idempotency_keys k
WHERE k.method = 'POST' AND k.path IN ('/messages', '/contact-cards', '/polls') AND k.state = 'done'
    AND k.org_id = m.org_id AND (k.response_body::jsonb) -> 'message' ->> 'id' = m.id;
DELETE FROM idempotency_keys WHERE method = 'POST' AND path IN ('/messages', '/contact-cards', '/polls');
CREATE UNIQUE INDEX messages_idempotency ON messages (org_id, idem_key) WHERE idem_key IS NOT NULL;
