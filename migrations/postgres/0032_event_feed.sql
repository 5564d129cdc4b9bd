-- The event feed: an organisation that turns it on (`PATCH /settings {"event_feed": true}`) has
-- its events written even without a webhook endpoint, and reads them in the order they were
-- committed (`GET /feed`, `GET /feed/stream`).
ALTER TABLE orgs ADD COLUMN event_feed BIGINT NOT NULL DEFAULT 0;

-- The feed's order. Transactions commit in another order than they write, so a sequence alone
-- could show a reader event 11 before event 10 has committed, and the reader would pass 10 by.
-- Each event carries the id of the transaction that wrote it (feed_txid) and a sequence
-- number (feed_seq, the order within it); a reader takes only the events of transactions older
-- than every transaction still running (pg_snapshot_xmin of its snapshot), which are all
-- committed or gone, in (feed_txid, feed_seq) order. The defaults are set after the columns are
-- added, so that the events already written keep NULL (the feed does not show them) and the
-- table is not rewritten.
ALTER TABLE events ADD COLUMN feed_txid BIGINT;
ALTER TABLE events ADD COLUMN feed_seq BIGINT;
CREATE SEQUENCE events_feed_seq;
ALTER TABLE events ALTER COLUMN feed_txid SET DEFAULT (pg_current_xact_id()::text::bigint);
ALTER TABLE events ALTER COLUMN feed_seq SET DEFAULT nextval('events_feed_seq');
CREATE INDEX events_feed ON events (org_id, feed_txid, feed_seq);

-- A feed's open streams hear of new events at once: every instance listens on msgline_feed
-- (workers/instances.rs) and is told the organisation of each event when it commits, if the
-- organisation reads a feed. A row trigger, not a statement one: a statement trigger would run
-- for every insert of an event, also those that insert nothing (most status moves of an
-- organisation without webhooks or feed); PostgreSQL folds the same notification repeated in
-- one transaction into one.
CREATE FUNCTION msgline_feed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM orgs WHERE id = NEW.org_id AND event_feed = 1) THEN
        PERFORM pg_notify('msgline_feed', NEW.org_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER events_feed_notify AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION msgline_feed_notify();
