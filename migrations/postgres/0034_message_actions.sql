-- What iMessage users do to a message: its numbers (from_number, to_number: E.164 or the handle
-- as the line reported it; to_number is NULL in a group), the message it answers (reply_to), its
-- effect and subject, and its edits and unsend. edits is a JSON array of {"body", "at"}, the
-- earlier texts oldest first; action is the JSON of the message's latest edit or unsend that is
-- not applied (pending, unknown or failed), NULL otherwise.
ALTER TABLE messages ADD COLUMN from_number TEXT;
ALTER TABLE messages ADD COLUMN to_number TEXT;
ALTER TABLE messages ADD COLUMN reply_to TEXT;
ALTER TABLE messages ADD COLUMN effect TEXT;
ALTER TABLE messages ADD COLUMN subject TEXT;
ALTER TABLE messages ADD COLUMN edited_at BIGINT;
ALTER TABLE messages ADD COLUMN unsent_at BIGINT;
ALTER TABLE messages ADD COLUMN edits TEXT;
ALTER TABLE messages ADD COLUMN action TEXT;

UPDATE messages SET
    from_number = CASE WHEN direction = 'outbound'
        THEN (SELECT e164 FROM lines WHERE lines.id = messages.line_id)
        ELSE (SELECT phone FROM contacts WHERE contacts.id = messages.contact_id) END,
    to_number = CASE WHEN direction = 'outbound'
        THEN (SELECT phone FROM contacts WHERE contacts.id = messages.contact_id)
        WHEN (SELECT kind FROM conversations WHERE conversations.id = messages.conversation_id) = 'direct'
        THEN (SELECT e164 FROM lines WHERE lines.id = messages.line_id) END;

-- Edits and unsends msgline asks a line for: pending while the line is called, then applied,
-- failed, or unknown until the line is asked (next_ask_at). kind is edit (with body) or unsend.
CREATE TABLE message_actions (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs(id),
    message_id   TEXT NOT NULL,
    line_id      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT,
    state        TEXT NOT NULL,
    error        TEXT,
    next_ask_at  BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX message_actions_by_message ON message_actions (message_id, id);
CREATE INDEX message_actions_unknown ON message_actions (state, next_ask_at);
