-- A send that finds a free slot calls its line itself, and until the line's answer is recorded
-- its claim is a row here, not a state of the message: the update that records the answer then
-- changes no indexed column of `messages` (its outbox state stays NULL throughout), so it is a
-- HOT update that writes no index entry, where a claim kept on the row made it rewrite every
-- index of the table. The row is deleted in the commit that records the answer; one whose time
-- ran out (its instance stopped mid-call) is handed to the reconciler as `unknown`.
CREATE TABLE message_claims (
    message_id     TEXT PRIMARY KEY,
    claimed_until  BIGINT NOT NULL
);
