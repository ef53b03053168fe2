-- Corrections and forgetting: why a fact was closed by hand, and the log of every
-- correction and destructive action (what, when, on whose request, what it removed).

-- 'wrong' when a person closed the fact as never true; NULL when a newer fact closed it.
ALTER TABLE edges ADD COLUMN closed_reason TEXT;

CREATE TABLE memory_actions (
    id          BIGSERIAL PRIMARY KEY,
    user_id     TEXT NOT NULL DEFAULT 'default',
    action      TEXT NOT NULL,
    level       TEXT NOT NULL CHECK (level IN ('read', 'write', 'destructive')),
    target      JSONB NOT NULL DEFAULT '{}'::jsonb,
    summary     TEXT NOT NULL DEFAULT '',
    requested_by TEXT NOT NULL DEFAULT 'api',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX memory_actions_user_time ON memory_actions (user_id, created_at);
