-- Segments in the order they were said within a session: retrieval reads the turns just
-- before and after a hit.
CREATE INDEX segments_session_start ON segments (session_id, start_s);
