-- Reactions (tapbacks). A reaction is a message of kind `reaction` (it follows the lifecycle
-- like any message); this row points it at the message it reacts to, so that a message can show
-- its reactions without reading every message of its conversation.
CREATE TABLE reactions (
    message_id  TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    -- The message reacted to; NULL for a reaction that arrived naming a message msgline does not
    -- know (an SMS "Loved “…”" quoting a text that is not in the conversation).
    target_id   TEXT,
    -- love, like, dislike, laugh, emphasize or question.
    reaction    TEXT NOT NULL,
    -- 1 when the reaction takes an earlier one of the same kind back.
    removed     BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX reactions_by_target ON reactions (target_id, created_at);
