-- Webhook endpoints, one delivery per event and endpoint, and every attempt at a delivery.
-- Events are fanned out to deliveries by the webhook worker: `webhooks_pending` marks the events
-- it has not yet fanned out, so a crash between writing an event and fanning it out skips nothing.

CREATE TABLE webhooks (
    id                          TEXT PRIMARY KEY,
    org_id                      TEXT NOT NULL REFERENCES orgs(id),
    -- Only this line's events when set (an endpoint registered with a line-bound key).
    line_id                     TEXT REFERENCES lines(id),
    url                         TEXT NOT NULL,
    description                 TEXT,
    -- Space-separated subscriptions: event types, `messaging.message.*` or `*`.
    event_types                 TEXT NOT NULL,
    -- Signing keys (`whsec_...`): the service must sign with them, so they are kept as given.
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,
    previous_secret_expires_at  BIGINT,
    enabled                     BIGINT NOT NULL,
    disabled_reason             TEXT,
    disabled_at                 BIGINT,
    -- The first failed attempt since the last success; NULL while the endpoint is healthy.
    failing_since               BIGINT,
    created_at                  BIGINT NOT NULL,
    updated_at                  BIGINT NOT NULL
);
CREATE INDEX webhooks_by_org ON webhooks (org_id, id);

-- state: pending (due at next_attempt_at), claimed (a worker is posting it until claimed_until),
-- delivered, failed (the schedule ran out, or the endpoint was disabled).
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs(id),
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id),
    event_id         TEXT NOT NULL REFERENCES events(id),
    state            TEXT NOT NULL,
    attempts         BIGINT NOT NULL,
    next_attempt_at  BIGINT,
    claimed_until    BIGINT,
    last_status      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, event_id);

CREATE TABLE webhook_attempts (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs(id),
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id),
    delivery_id      TEXT NOT NULL REFERENCES webhook_deliveries(id),
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    attempt          BIGINT NOT NULL,
    status_code      BIGINT,
    succeeded        BIGINT NOT NULL,
    latency_ms       BIGINT NOT NULL,
    response_body    TEXT,
    error            TEXT,
    next_attempt_at  BIGINT,
    created_at       BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
CREATE INDEX webhook_attempts_by_age ON webhook_attempts (created_at);

ALTER TABLE events ADD COLUMN webhooks_pending BIGINT NOT NULL DEFAULT 1;
-- Events from before webhooks existed have nobody to go to.
UPDATE events SET webhooks_pending = 0;
CREATE INDEX events_webhooks_pending ON events (id) WHERE webhooks_pending = 1;
CREATE INDEX events_by_org_time ON events (org_id, created_at);
