-- 0009: bans, and a change feed for the per-queue configuration.
--
-- Operators ban and unban users through the admin API; every gateway keeps
-- the active bans in memory, reloads them periodically and hears of changes
-- at once over the Redis control channel.
CREATE TABLE bans (
    user_id    text PRIMARY KEY,
    reason     text NOT NULL DEFAULT '',
    -- NULL: until lifted.
    expires_at timestamptz,
    created_at timestamptz NOT NULL
);

-- queue_configs (0001) holds the queues created or changed through the admin
-- API; each row replaces the queue file's entry of the same name. A retired
-- queue keeps its row as a tombstone (retired, config JSON null), so the
-- highest version only ever grows: every process polls it and reloads the
-- rows when it moves.
CREATE SEQUENCE queue_configs_version;

ALTER TABLE queue_configs
    ADD COLUMN version bigint NOT NULL DEFAULT 0,
    ADD COLUMN retired boolean NOT NULL DEFAULT false;

CREATE INDEX queue_configs_by_version ON queue_configs (version);
