-- Android phones that dial in (`admin line create --bridge-kind android-gateway --dial-in`): the
-- phone's SMS Gateway app registers with the line's registration token and then calls msgline
-- with a device token of its own. Both tokens are stored hashed. One device per line: a second
-- registration replaces the first (its token stops working). last_seen_at: the phone's last
-- call (its event stream calls while open), for the line's health.
CREATE TABLE dial_in_devices (
    line_id            TEXT PRIMARY KEY,
    registration_hash  TEXT NOT NULL UNIQUE,
    device_id          TEXT,
    token_hash         TEXT UNIQUE,
    name               TEXT,
    registered_at      INTEGER,
    last_seen_at       INTEGER
);

-- What waits for a dial-in phone to take it: the request as the app reads it (GET /message),
-- handed out once (taken_at), and what the phone last reported of it (PATCH /message).
CREATE TABLE dial_in_queue (
    message_id   TEXT PRIMARY KEY,
    line_id      TEXT NOT NULL,
    request      TEXT NOT NULL,
    queued_at    INTEGER NOT NULL,
    taken_at     INTEGER,
    reported     TEXT,
    reason       TEXT
);
CREATE INDEX dial_in_queue_waiting ON dial_in_queue (line_id, queued_at) WHERE taken_at IS NULL;
