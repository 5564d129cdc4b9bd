-- What a line's device last said about a number's iMessage reachability (GET /availability):
-- asked again once the answer is older than MSGLINE_AVAILABILITY_TTL_SECONDS.
CREATE TABLE availability (
    line_id     TEXT NOT NULL,
    phone       TEXT NOT NULL,
    imessage    INTEGER NOT NULL,
    checked_at  INTEGER NOT NULL,
    PRIMARY KEY (line_id, phone)
);
