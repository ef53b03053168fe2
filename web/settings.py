"""Web settings (env prefix ``ANNIE_``): where to listen and the access token."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_data_dir


class WebSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = 7860
    # The access token; when unset, one is generated once and kept in <data dir>/token.
    token: str | None = None
    # Host names the server answers to besides the loopback names and ``host`` (a guard
    # against DNS rebinding: a page on another site cannot reach Annie by a name it controls).
    allowed_hosts: list[str] = Field(default_factory=list)

    def host_names(self) -> set[str]:
        names = {"localhost", "127.0.0.1", "::1", self.host.lower(), *(h.lower() for h in self.allowed_hosts)}
        return {n.strip("[]") for n in names if n}
