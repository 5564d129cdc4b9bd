-- Nothing reads events by organisation in id order (a replay reads them by organisation and
-- time, through events_by_org_time), and every event written paid for this index.
DROP INDEX IF EXISTS events_by_org;
