-- A segment has a second vector: the turn read after the last sentence of the turn before it
-- (memory.turn_context). This is a digest of that sentence as it was when the vector was
-- made ('' when it has none: no turn before, or the same speaker's): when the turn before changes or is forgotten, the
-- digest no longer matches and the segment is embedded again. NULL: never made.
ALTER TABLE segments ADD COLUMN embedded_context TEXT;
