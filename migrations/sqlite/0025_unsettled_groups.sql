-- A group whose creation timed out is `unknown` until the line is asked, which happens through
-- its opening message's outbox job. When the line's own reports of that message come first,
-- they end the job, and nothing asked about the group again. The reconciler now also looks at
-- unsettled groups directly: this index holds those only (a group leaves it when it settles).
CREATE INDEX conversations_unsettled_groups ON conversations (created_at) WHERE group_state IN ('creating', 'unknown');
