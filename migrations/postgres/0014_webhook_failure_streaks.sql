-- The time of an endpoint's latest failed attempt: a failure after a longer quiet gap than the
-- retry schedule allows starts a new failing streak (MSGLINE_WEBHOOK_DISABLE_AFTER counts
-- continuous failure only).
ALTER TABLE webhooks ADD COLUMN last_failed_at BIGINT;
