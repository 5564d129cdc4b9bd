-- The rows every message writes (the message, its delivery attempts, its events) no longer
-- reference their organisation, line, conversation, contact or message by foreign key. Each such
-- key made every inserted row run a lookup of its own (four for a message) and lock the row it
-- found FOR KEY SHARE, and the commit lanes took those locks on the same organisation and line
-- rows at once. Inserting 40,000 messages in groups of ten took 60-83 µs a row with the keys and
-- 36-42 µs without (BENCHMARKS.md). No row these keys pointed to is ever deleted (organisations,
-- lines, conversations, contacts and messages are kept), and every id such a row holds was read
-- or written in the same unit of work, inside the organisation that owns it.
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_org_id_fkey;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_conversation_id_fkey;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_contact_id_fkey;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_line_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_org_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_message_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_line_id_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_org_id_fkey;
