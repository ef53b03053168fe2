-- The temporal knowledge graph: relationship facts between entities as bi-temporal
-- edges. valid_from/valid_to: when the fact was true in the world; recorded_at /
-- expired_at: when Annie learned it and when she learned it no longer holds. A
-- contradicting fact closes the old edge (valid_to, superseded_by); nothing is deleted.

CREATE TABLE edges (
    id             BIGSERIAL PRIMARY KEY,
    user_id        TEXT NOT NULL DEFAULT 'default',
    subject_id     BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    predicate      TEXT NOT NULL,
    object_id      BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    fact           TEXT NOT NULL,
    confidence     REAL NOT NULL DEFAULT 0.5,
    valid_from     TIMESTAMPTZ NOT NULL,
    valid_to       TIMESTAMPTZ,
    recorded_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    expired_at     TIMESTAMPTZ,
    superseded_by  BIGINT REFERENCES edges (id),
    source_session TEXT,
    source_segment TEXT
);
CREATE INDEX edges_subject_active ON edges (subject_id, predicate) WHERE valid_to IS NULL;
CREATE INDEX edges_object ON edges (object_id);

CREATE TABLE entity_merges (
    id          BIGSERIAL PRIMARY KEY,
    user_id     TEXT NOT NULL DEFAULT 'default',
    kept_id     BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    merged_name TEXT NOT NULL,
    merged_type TEXT NOT NULL,
    reason      TEXT NOT NULL,
    similarity  REAL,
    merged_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
