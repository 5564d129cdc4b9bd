-- PostgreSQL only: its messages and conversations leave room on each page for updates. A
-- SQLite update rewrites the row in its B-tree page and has no such setting.
SELECT 1;
