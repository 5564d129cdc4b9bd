-- An arrival on a shared line goes to the organisation that last wrote to the sender from that
-- line. That was read from the messages through `(line_id, contact_id, id)`, which SQLite's
-- planner entered by the line alone: every message the line ever carried was read and sorted on
-- every arrival. It is now read from the sender's contacts (one per organisation that knows the
-- number, found by phone) and each one's direct conversation on the line, whose latest outbound
-- message `messages_by_conversation` gives. The messages' index goes: every message paid for an
-- entry at a random place in it (on SQLite, dropping it cut the bytes written per send in the
-- bench by 7-11 %).
DROP INDEX IF EXISTS messages_by_line_contact;
CREATE INDEX contacts_by_phone ON contacts (phone);
