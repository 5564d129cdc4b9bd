-- A message is updated three or four times within seconds of its insert (submitted, sent,
-- delivered, read), and a conversation once for every message. None of these updates changes
-- an indexed column, so PostgreSQL can write the new row version on the same page without
-- touching any index (a HOT update) -- if the page has room. Full pages forced about half of
-- the message updates to add an entry to each of the table's five indexes. Half of each new
-- page is now left free for updates: about four in five message updates stay on their page,
-- for twice the table's size on disk. Pages written before this migration keep their layout.
ALTER TABLE messages SET (fillfactor = 50);
ALTER TABLE conversations SET (fillfactor = 50);
