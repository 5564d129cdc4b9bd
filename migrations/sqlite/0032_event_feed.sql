-- The event feed: an organisation that turns it on (`PATCH /settings {"event_feed": true}`) has
-- its events written even without a webhook endpoint, and reads them in the order they were
-- committed (`GET /feed`, `GET /feed/stream`).
ALTER TABLE orgs ADD COLUMN event_feed INTEGER NOT NULL DEFAULT 0;

-- The feed's order. On SQLite one writer commits at a time, so the rowid order is the commit
-- order: the feed reads by rowid, through this index (an index holds the rowid after its
-- columns). feed_txid and feed_seq are PostgreSQL's order (the writing transaction and a
-- sequence), kept here only so that both engines have the same columns; they stay NULL.
ALTER TABLE events ADD COLUMN feed_txid INTEGER;
ALTER TABLE events ADD COLUMN feed_seq INTEGER;
CREATE INDEX events_feed ON events (org_id);
