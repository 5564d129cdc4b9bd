-- On PostgreSQL this migration drops the foreign keys of messages, delivery attempts and events
-- (see migrations/postgres). SQLite's checks take no row locks and cost little beside its
-- single writer; it keeps them: the schema is the same in tables and columns.
SELECT 1;
