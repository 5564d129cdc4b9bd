-- Hosted agents, their runs (a durable queue: one run per triggering inbound message) and the
-- tool calls each run made.

CREATE TABLE agents (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    name          TEXT NOT NULL,
    line_id       TEXT NOT NULL REFERENCES lines(id),
    photo_url     TEXT,
    photo         TEXT,
    instructions  TEXT NOT NULL,
    tools         TEXT NOT NULL,
    model         TEXT,
    enabled       BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    deleted_at    BIGINT
);
CREATE INDEX agents_by_org ON agents (org_id, id);
-- One enabled agent per line (and organisation: a shared line serves several).
CREATE UNIQUE INDEX agents_one_enabled_per_line ON agents (org_id, line_id) WHERE enabled = 1 AND deleted_at IS NULL;

CREATE TABLE agent_runs (
    id                  TEXT PRIMARY KEY,
    agent_id            TEXT NOT NULL REFERENCES agents(id),
    org_id              TEXT NOT NULL REFERENCES orgs(id),
    trigger_message_id  TEXT NOT NULL REFERENCES messages(id),
    conversation_id     TEXT NOT NULL REFERENCES conversations(id),
    state               TEXT NOT NULL,
    attempts            BIGINT NOT NULL,
    available_at        BIGINT NOT NULL,
    claimed_until       BIGINT,
    outcome             TEXT,
    error               TEXT,
    created_at          BIGINT NOT NULL,
    finished_at         BIGINT,
    UNIQUE (agent_id, trigger_message_id)
);
CREATE INDEX agent_runs_ready ON agent_runs (state, available_at);
CREATE INDEX agent_runs_by_agent ON agent_runs (agent_id, id);
CREATE INDEX agent_runs_by_conversation ON agent_runs (agent_id, conversation_id, created_at);

CREATE TABLE agent_tool_calls (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES agent_runs(id),
    seq         BIGINT NOT NULL,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    status      TEXT NOT NULL,
    result      TEXT NOT NULL,
    message_id  TEXT,
    created_at  BIGINT NOT NULL,
    UNIQUE (run_id, seq)
);
