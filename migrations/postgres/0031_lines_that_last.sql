-- Lines as paced, observed capacity.
--
-- A line's sending policy is what an operator set over its kind's defaults (a JSON object of
-- limits, NULL: the defaults alone), and its health: active, paused (by an operator), flagged
-- (its device said its account is blocked; stays until an operator resumes it) or offline (its
-- probes fail), with the reason and since when.
ALTER TABLE lines ADD COLUMN policy TEXT;
ALTER TABLE lines ADD COLUMN health TEXT NOT NULL DEFAULT 'active';
ALTER TABLE lines ADD COLUMN health_reason TEXT;
ALTER TABLE lines ADD COLUMN health_since BIGINT;

-- A message that waits for its line (its budget, its health) has outbox_state 'paced': the
-- dispatcher's claim of pending jobs does not see it, the line's pacer hands it over in order
-- (available_at) when the budget allows. expires_at ends its wait: past it the message fails
-- with `expired` and is never sent. pool_id: sent through a pool, so it may move to another
-- line of the pool while no line has been handed it.
ALTER TABLE messages ADD COLUMN expires_at BIGINT;
ALTER TABLE messages ADD COLUMN pool_id TEXT;
CREATE INDEX messages_paced ON messages (line_id, available_at) WHERE outbox_state = 'paced';
CREATE INDEX messages_paced_expiry ON messages (line_id, expires_at) WHERE outbox_state = 'paced';

-- Every send a line was handed by its pacer, for its budgets' windows (a day's and a month's
-- counts, the gap since the last one), kept 40 days. new_contact: the number was new to the line.
CREATE TABLE line_sends (
    line_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    org_id       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    new_contact  INTEGER NOT NULL,
    at           BIGINT NOT NULL,
    PRIMARY KEY (line_id, message_id)
);
CREATE INDEX line_sends_by_time ON line_sends (line_id, at);
CREATE INDEX line_sends_by_recipient ON line_sends (line_id, recipient, at);

-- Sender pools: lines of one organisation that a send may name together (`pool_id`).
CREATE TABLE pools (
    id                      TEXT PRIMARY KEY,
    org_id                  TEXT NOT NULL,
    name                    TEXT NOT NULL,
    failover_after_seconds  BIGINT NOT NULL,
    created_at              BIGINT NOT NULL
);
CREATE INDEX pools_by_org ON pools (org_id, id);
CREATE TABLE pool_lines (
    pool_id   TEXT NOT NULL,
    line_id   TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (pool_id, line_id)
);
CREATE INDEX pool_lines_by_line ON pool_lines (line_id);
