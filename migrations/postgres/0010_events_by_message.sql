-- Nothing reads events by message but a diagnostic helper of the tests: the API lists events by
-- organisation and time, and the webhook worker reads them by id. Each message writes four
-- events (queued, submitted, sent, delivered), and each paid for an entry in this index.
DROP INDEX IF EXISTS events_by_message;
