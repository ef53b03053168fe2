"""Memory settings (env prefix ``ANNIE_``; ``DATABASE_URL`` and ``QDRANT_URL`` too)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_data_dir


class MemorySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    # PostgreSQL 15+; when unset Annie starts an embedded PostgreSQL under the data dir.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANNIE_DATABASE_URL", "DATABASE_URL")
    )
    db_pool_min: int = 1
    db_pool_max: int = 10
    # Searches that run at once (two per core); more wait their turn in arrival order
    # (see memory.admission).
    search_concurrency: int = Field(default_factory=lambda: 2 * (os.cpu_count() or 1), ge=1, le=64)
    # A Qdrant server; when unset the in-process Qdrant engine stores vectors under the data dir.
    qdrant_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANNIE_QDRANT_URL", "QDRANT_URL")
    )
    qdrant_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("ANNIE_QDRANT_API_KEY", "QDRANT_API_KEY")
    )
    qdrant_collection: str = "annie_segments"
    user_id: str = "default"
    # A session is extracted (entities, facts) once no new segment arrived for this long.
    extract_quiet_s: float = Field(default=120.0, ge=0, le=86400)

    @property
    def transcripts_dir(self) -> Path:
        return self.data_dir / "transcripts"

    @property
    def postgres_dir(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def vectors_dir(self) -> Path:
        return self.data_dir / "vectors"

    @property
    def run_dir(self) -> Path:
        """Where managed model servers keep their logs."""
        return self.data_dir / "run"
