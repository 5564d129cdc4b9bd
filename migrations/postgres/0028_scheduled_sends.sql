-- A scheduled send is written at once with status `scheduled`, `send_at` its time, and its
-- outbox job pending from that time (`available_at` = `send_at`): the dispatcher's claim of due
-- jobs finds it when it is due, and not before (the claim reads its index by `available_at`).
ALTER TABLE messages ADD COLUMN send_at BIGINT;
