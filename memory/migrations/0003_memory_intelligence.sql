-- Memory intelligence: extraction bookkeeping, access-driven salience, fact
-- reinforcement, and the stored daily reflections.

-- When an entity was last used in an answer (access raises salience) and last decayed.
ALTER TABLE entities ADD COLUMN accessed_at TIMESTAMPTZ;
ALTER TABLE entities ADD COLUMN decayed_at TIMESTAMPTZ;
CREATE INDEX entities_user_type ON entities (user_id, type, last_seen);

-- A fact heard again is reinforced, not duplicated.
ALTER TABLE edges ADD COLUMN mention_count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE edges ADD COLUMN last_seen TIMESTAMPTZ;
CREATE INDEX edges_object_active ON edges (object_id, predicate) WHERE valid_to IS NULL;
CREATE INDEX edges_user_valid ON edges (user_id, valid_from);

-- What an extraction run produced, per session (forced runs overwrite it).
ALTER TABLE sessions ADD COLUMN extraction JSONB;

-- The daily reflection: computed once per user and day, then served from here.
CREATE TABLE daily_reflections (
    user_id     TEXT NOT NULL DEFAULT 'default',
    day         DATE NOT NULL,
    content     JSONB NOT NULL,
    summary     TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, day)
);
