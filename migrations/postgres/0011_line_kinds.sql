-- A line's bridge kind (msgline's own protocol, BlueBubbles, SMS Gateway for Android) and the
-- kind's settings as JSON (credentials for the device and the secret its webhooks carry). The
-- settings are never returned by the API or the CLI, and never logged.
ALTER TABLE lines ADD COLUMN bridge_kind TEXT NOT NULL DEFAULT 'msgline';
ALTER TABLE lines ADD COLUMN bridge_settings TEXT;

-- What a device calls a message or a chat (a BlueBubbles guid, a chat guid) mapped to msgline's
-- id, per line. A device that takes msgline's own ids (the simulator, the Android gateway) needs
-- no row here.
CREATE TABLE bridge_refs (
    line_id     TEXT NOT NULL REFERENCES lines(id),
    remote_id   TEXT NOT NULL,
    local_id    TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (line_id, remote_id)
);
CREATE INDEX bridge_refs_by_local ON bridge_refs (line_id, local_id);
