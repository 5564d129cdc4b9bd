-- Contact cards carry their vCard to the line; polls and the votes on them.

ALTER TABLE messages ADD COLUMN attachment TEXT;

CREATE TABLE polls (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs(id),
    message_id       TEXT NOT NULL UNIQUE REFERENCES messages(id),
    conversation_id  TEXT NOT NULL REFERENCES conversations(id),
    line_id          TEXT NOT NULL REFERENCES lines(id),
    question         TEXT NOT NULL,
    options          TEXT NOT NULL,
    created_at       BIGINT NOT NULL
);
CREATE INDEX polls_by_conversation ON polls (conversation_id, id);

CREATE TABLE poll_votes (
    id            TEXT PRIMARY KEY,
    poll_id       TEXT NOT NULL REFERENCES polls(id),
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    contact_id    TEXT NOT NULL REFERENCES contacts(id),
    option_index  BIGINT NOT NULL,
    message_id    TEXT NOT NULL REFERENCES messages(id),
    created_at    BIGINT NOT NULL
);
CREATE INDEX poll_votes_by_poll ON poll_votes (poll_id, contact_id, id);
