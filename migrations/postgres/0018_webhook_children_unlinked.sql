-- Deliveries and attempts no longer reference their endpoint by foreign key. Every row inserted
-- under such a key locks the endpoint's row FOR KEY SHARE, and that row is updated on every
-- attempt (its failure streak): each update under those locks made a larger multixact, and
-- under a steady webhook load the multixact cache thrashed until sends took tens of seconds
-- (docs/reliability.md, Soak, run 7). Deleting an endpoint still deletes its deliveries and
-- attempts in the same transaction; a delivery whose endpoint is gone is deleted when claimed.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_webhook_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_webhook_id_fkey;
