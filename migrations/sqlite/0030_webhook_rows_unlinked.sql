-- PostgreSQL's webhook deliveries and attempts drop their foreign keys here (see its migration
-- 0030). SQLite keeps them: it cannot drop a constraint without rebuilding the table, and its
-- check is a lookup in a page the committer has at hand.
SELECT 1;
