-- Organisations, API keys, lines, contacts and conversations.
-- Timestamps are integer milliseconds since the Unix epoch; ids are prefixed, time-ordered text.

CREATE TABLE orgs (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE lines (
    id                  TEXT PRIMARY KEY,
    org_id              TEXT REFERENCES orgs(id),
    e164                TEXT NOT NULL UNIQUE,
    kind                TEXT NOT NULL,
    bridge_url          TEXT NOT NULL,
    bridge_token        TEXT,
    bridge_secret_hash  TEXT NOT NULL UNIQUE,
    capabilities        TEXT,
    status              TEXT NOT NULL,
    checked_at          BIGINT,
    created_at          BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    name        TEXT NOT NULL,
    key_hash    TEXT NOT NULL UNIQUE,
    key_hint    TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    line_id     TEXT REFERENCES lines(id),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT
);
CREATE INDEX api_keys_by_org ON api_keys (org_id, id);

CREATE TABLE contacts (
    id                   TEXT PRIMARY KEY,
    org_id               TEXT NOT NULL REFERENCES orgs(id),
    phone                TEXT NOT NULL,
    name                 TEXT,
    -- The name in lower case for search: SQLite's LOWER() folds ASCII only.
    name_lower           TEXT,
    email                TEXT,
    organization         TEXT,
    note                 TEXT,
    imessage_reachable   BIGINT,
    imessage_checked_at  BIGINT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    UNIQUE (org_id, phone)
);
CREATE INDEX contacts_by_org ON contacts (org_id, id);

CREATE TABLE conversations (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs(id),
    line_id          TEXT NOT NULL REFERENCES lines(id),
    kind             TEXT NOT NULL,
    contact_id       TEXT REFERENCES contacts(id),
    name             TEXT,
    group_state      TEXT,
    created_at       BIGINT NOT NULL,
    last_message_at  BIGINT
);
CREATE UNIQUE INDEX conversations_direct_unique ON conversations (org_id, line_id, contact_id) WHERE kind = 'direct';
CREATE INDEX conversations_by_org ON conversations (org_id, id);

CREATE TABLE conversation_participants (
    conversation_id  TEXT NOT NULL REFERENCES conversations(id),
    phone            TEXT NOT NULL,
    contact_id       TEXT REFERENCES contacts(id),
    PRIMARY KEY (conversation_id, phone)
);
CREATE INDEX participants_by_contact ON conversation_participants (contact_id);
