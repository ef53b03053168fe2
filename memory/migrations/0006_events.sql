-- Observability events (memory.events): what each stage of Annie did and how long it
-- took. Written in batches by the event writer over its own small pool; rows older than
-- the retention period (7 days) are pruned by the writer. No transcript text is kept here.
CREATE TABLE events (
    event_id    TEXT PRIMARY KEY,
    ts          TIMESTAMPTZ NOT NULL,
    service     TEXT NOT NULL,
    process     TEXT NOT NULL,
    zone        TEXT NOT NULL,
    event_type  TEXT NOT NULL CHECK (event_type IN ('start', 'complete', 'error', 'metric')),
    session_id  TEXT,
    data        JSONB NOT NULL DEFAULT '{}'::jsonb,
    reasoning   TEXT
);
CREATE INDEX events_ts ON events (ts);
CREATE INDEX events_process_ts ON events (process, ts);
CREATE INDEX events_session_ts ON events (session_id, ts) WHERE session_id IS NOT NULL;
