-- On PostgreSQL this migration drops the foreign keys from deliveries and attempts to their
-- endpoint (see migrations/postgres). SQLite has no multixacts and keeps them: the schema is
-- the same in tables and columns.
SELECT 1;
