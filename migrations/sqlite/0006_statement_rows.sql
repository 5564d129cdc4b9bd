-- PostgreSQL only: msgline_rows(json), the rows of a merged statement. SQLite runs its statements
-- one by one on the committer thread and has nothing to add here.
SELECT 1;
