-- Messages, their delivery outbox and attempts, lifecycle events, idempotency records,
-- bridge callback ids and inbound messages nobody could be found for.

CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES orgs(id),
    conversation_id   TEXT NOT NULL REFERENCES conversations(id),
    contact_id        TEXT REFERENCES contacts(id),
    line_id           TEXT NOT NULL REFERENCES lines(id),
    direction         TEXT NOT NULL,
    channel           TEXT NOT NULL,
    kind              TEXT NOT NULL,
    body              TEXT NOT NULL,
    payload           TEXT,
    status            TEXT NOT NULL,
    error             TEXT,
    delivery_unknown  BIGINT NOT NULL,
    agent_id          TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    submitted_at      BIGINT,
    sent_at           BIGINT,
    delivered_at      BIGINT,
    read_at           BIGINT
);
-- Every list is one organisation's, newest first: the organisation leads each index so that
-- a filtered list reads only its own rows in order.
CREATE INDEX messages_by_org ON messages (org_id, id);
CREATE INDEX messages_by_conversation ON messages (org_id, conversation_id, id);
CREATE INDEX messages_by_contact ON messages (org_id, contact_id, id);
-- Routing inbound messages on a shared line: who last wrote to this number from this line.
CREATE INDEX messages_by_line_contact ON messages (line_id, contact_id, id);

-- One row per outbound message not yet settled with its line.
-- state: pending (to send), claimed (a dispatcher is calling the line), unknown (to reconcile).
CREATE TABLE outbox (
    message_id     TEXT PRIMARY KEY REFERENCES messages(id),
    line_id        TEXT NOT NULL REFERENCES lines(id),
    state          TEXT NOT NULL,
    attempts       BIGINT NOT NULL,
    available_at   BIGINT NOT NULL,
    claimed_until  BIGINT,
    created_at     BIGINT NOT NULL
);
CREATE INDEX outbox_ready ON outbox (state, available_at);

CREATE TABLE delivery_attempts (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs(id),
    message_id   TEXT NOT NULL REFERENCES messages(id),
    line_id      TEXT NOT NULL REFERENCES lines(id),
    attempt      BIGINT NOT NULL,
    outcome      TEXT NOT NULL,
    http_status  BIGINT,
    latency_ms   BIGINT NOT NULL,
    error        TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX delivery_attempts_by_org ON delivery_attempts (org_id, id);
CREATE INDEX delivery_attempts_by_message ON delivery_attempts (message_id, id);

-- Lifecycle events (messaging.message.* and others), written with the change that causes them.
CREATE TABLE events (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    type        TEXT NOT NULL,
    message_id  TEXT,
    data        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX events_by_org ON events (org_id, id);
CREATE INDEX events_by_message ON events (message_id);

CREATE TABLE idempotency_keys (
    org_id           TEXT NOT NULL,
    method           TEXT NOT NULL,
    path             TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    state            TEXT NOT NULL,
    response_status  BIGINT,
    response_body    TEXT,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    PRIMARY KEY (org_id, method, path, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE bridge_events (
    line_id      TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    received_at  BIGINT NOT NULL,
    PRIMARY KEY (line_id, event_id)
);

CREATE TABLE unrouted_inbound (
    id           TEXT PRIMARY KEY,
    line_id      TEXT NOT NULL REFERENCES lines(id),
    from_phone   TEXT NOT NULL,
    body         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    received_at  BIGINT NOT NULL
);
