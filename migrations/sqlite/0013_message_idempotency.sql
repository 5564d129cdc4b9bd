-- A send's idempotency record lives on the message it made: the key (scoped by route, as
-- "<path> <key>"), the request's fingerprint, what the answer carried beside the message (a
-- contact card, a poll) and when the key expires. The answer is the message as it was
-- accepted, so no copy of it is kept. Records of earlier sends carry over; other routes' keys
-- (group creation) stay in idempotency_keys.
ALTER TABLE messages ADD COLUMN idem_key TEXT;
ALTER TABLE messages ADD COLUMN idem_fingerprint TEXT;
ALTER TABLE messages ADD COLUMN idem_extra TEXT;
ALTER TABLE messages ADD COLUMN idem_expires_at INTEGER;
UPDATE messages SET
    idem_key = (SELECT k.path || ' ' || k.idem_key FROM idempotency_keys k
        WHERE k.org_id = messages.org_id AND json_extract(k.response_body, '$.message.id') = messages.id),
    idem_fingerprint = (SELECT k.fingerprint FROM idempotency_keys k
        WHERE k.org_id = messages.org_id AND json_extract(k.response_body, '$.message.id') = messages.id),
    idem_extra = (SELECT NULLIF(json_remove(k.response_body, '$.message', '$.duplicate', '$.delivery_unknown'), '{}')
        FROM idempotency_keys k
        WHERE k.org_id = messages.org_id AND json_extract(k.response_body, '$.message.id') = messages.id),
    idem_expires_at = (SELECT k.expires_at FROM idempotency_keys k
        WHERE k.org_id = messages.org_id AND json_extract(k.response_body, '$.message.id') = messages.id)
WHERE id IN (SELECT json_extract(response_body, '$.message.id') FROM idempotency_keys
    WHERE method = 'POST' AND path IN ('/messages', '/contact-cards', '/polls') AND state = 'done');
DELETE FROM idempotency_keys WHERE method = 'POST' AND path IN ('/messages', '/contact-cards', '/polls');
CREATE UNIQUE INDEX messages_idempotency ON messages (org_id, idem_key) WHERE idem_key IS NOT NULL;
