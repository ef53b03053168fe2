-- Items of the capture files that could not be indexed, with the reason. A bad line or
-- segment is set aside here and the rest of its session goes on; GET /v1/stats counts
-- them and POST /v1/ingest/{session_id} lists a session's.
CREATE TABLE quarantine (
    id          BIGSERIAL PRIMARY KEY,
    path        TEXT NOT NULL,
    line_no     BIGINT NOT NULL,
    session_id  TEXT NOT NULL,
    segment_id  TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (path, line_no, segment_id)
);
CREATE INDEX quarantine_session ON quarantine (session_id);
