-- Memory core: capture sessions, transcript segments with full text, entities,
-- ingest offsets and the background job queue. Every user-owned row has user_id.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE sessions (
    session_id      TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL DEFAULT 'default',
    device_id       TEXT NOT NULL DEFAULT '',
    started_at      TIMESTAMPTZ NOT NULL,
    last_segment_at TIMESTAMPTZ,
    segment_count   INTEGER NOT NULL DEFAULT 0,
    source_path     TEXT,
    extracted_at    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user_started ON sessions (user_id, started_at);

CREATE TABLE segments (
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    segment_id     TEXT NOT NULL,
    user_id        TEXT NOT NULL DEFAULT 'default',
    speaker        TEXT NOT NULL DEFAULT '',
    text           TEXT NOT NULL,
    text_tsv       TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    start_s        DOUBLE PRECISION NOT NULL,
    end_s          DOUBLE PRECISION NOT NULL,
    ts             TIMESTAMPTZ NOT NULL,
    language       TEXT,
    stt_engine     TEXT,
    emotion        JSONB,
    is_sweep       BOOLEAN NOT NULL DEFAULT false,
    pinned         BOOLEAN NOT NULL DEFAULT false,
    embedded_model TEXT,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, segment_id)
);
CREATE INDEX segments_tsv ON segments USING GIN (text_tsv);
CREATE INDEX segments_user_ts ON segments (user_id, ts);
CREATE INDEX segments_speaker ON segments (user_id, speaker);
CREATE INDEX segments_unembedded ON segments (session_id) WHERE embedded_model IS NULL;

CREATE TABLE entities (
    id              BIGSERIAL PRIMARY KEY,
    user_id         TEXT NOT NULL DEFAULT 'default',
    type            TEXT NOT NULL,
    name            TEXT NOT NULL,
    normalized_name TEXT NOT NULL,
    properties      JSONB NOT NULL DEFAULT '{}'::jsonb,
    confidence      REAL NOT NULL DEFAULT 0,
    sensitivity     TEXT NOT NULL DEFAULT 'open',
    first_seen      TIMESTAMPTZ NOT NULL,
    last_seen       TIMESTAMPTZ NOT NULL,
    mention_count   INTEGER NOT NULL DEFAULT 0,
    salience        REAL NOT NULL DEFAULT 1,
    tier            TEXT NOT NULL DEFAULT 'L0',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (user_id, type, normalized_name)
);
CREATE INDEX entities_name_trgm ON entities USING GIN (normalized_name gin_trgm_ops);

CREATE TABLE entity_mentions (
    entity_id    BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    session_id   TEXT NOT NULL,
    segment_id   TEXT NOT NULL,
    user_id      TEXT NOT NULL DEFAULT 'default',
    evidence     TEXT NOT NULL DEFAULT '',
    confidence   REAL NOT NULL DEFAULT 0,
    mentioned_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entity_id, session_id, segment_id),
    FOREIGN KEY (session_id, segment_id) REFERENCES segments (session_id, segment_id) ON DELETE CASCADE
);
CREATE INDEX entity_mentions_segment ON entity_mentions (session_id, segment_id);

CREATE TABLE ingest_offsets (
    path        TEXT PRIMARY KEY,
    byte_offset BIGINT NOT NULL DEFAULT 0,
    line_no     BIGINT NOT NULL DEFAULT 0,
    file_id     TEXT NOT NULL DEFAULT '',
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id           BIGSERIAL PRIMARY KEY,
    kind         TEXT NOT NULL,
    dedup_key    TEXT NOT NULL,
    payload      JSONB NOT NULL DEFAULT '{}'::jsonb,
    state        TEXT NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'running', 'done', 'dead')),
    priority     INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 5,
    run_after    TIMESTAMPTZ NOT NULL DEFAULT now(),
    lease_until  TIMESTAMPTZ,
    leased_by    TEXT,
    last_error   TEXT,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at  TIMESTAMPTZ
);
-- At most one queued job per key; a running one may coexist with one queued behind it,
-- so work that arrives while a job runs is not lost.
CREATE UNIQUE INDEX jobs_dedup_queued ON jobs (kind, dedup_key) WHERE state = 'queued';
CREATE INDEX jobs_ready ON jobs (state, run_after, priority DESC);
