-- Webhook deliveries and attempts no longer reference their organisation, event or delivery by
-- foreign key: each such key ran a lookup of its own for every inserted row (two for a delivery,
-- two for an attempt), about 4 % of the machine while a backlog of deliveries drained
-- (BENCHMARKS.md). No organisation or event is ever deleted, and every id such a row holds was
-- read or written in the same unit of work. A delivery's attempts are deleted by age before the
-- settled deliveries of the same age, and with its endpoint; an attempt left without its
-- delivery is deleted by age like any other.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_org_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_org_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_delivery_id_fkey;
