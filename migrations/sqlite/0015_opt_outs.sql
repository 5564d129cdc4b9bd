-- Opt-outs: a number that texted STOP (or a synonym) to a line gets nothing more from that
-- organisation on that line until it texts START or the opt-out is cleared.
CREATE TABLE opt_outs (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    line_id     TEXT NOT NULL,
    phone       TEXT NOT NULL,
    contact_id  TEXT NOT NULL,
    -- The word that opted the number out (`stop`, `unsubscribe`, ...).
    keyword     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (org_id, line_id, phone)
);
CREATE INDEX opt_outs_by_org ON opt_outs (org_id, id);
CREATE INDEX opt_outs_by_contact ON opt_outs (contact_id);
-- The contact's earliest opt-out still in force on any of its organisation's lines.
ALTER TABLE contacts ADD COLUMN opted_out_at INTEGER;
-- The organisation's automatic replies; NULL means the default text.
ALTER TABLE orgs ADD COLUMN opt_out_reply TEXT;
ALTER TABLE orgs ADD COLUMN opt_in_reply TEXT;
ALTER TABLE orgs ADD COLUMN help_reply TEXT;
