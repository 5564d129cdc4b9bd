-- SQLite only: its outbox and callback ids are stored in key order (WITHOUT ROWID). A
-- PostgreSQL table is a heap beside its indexes whatever its key, and has nothing to change.
SELECT 1;
