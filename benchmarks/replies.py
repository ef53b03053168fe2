"""Saved LLM replies: record a live run's replies, replay them without the model.

A benchmark run through :class:`Recorder` keeps every reply of the LLM (the parsed JSON of
``chat_json``, the text of ``chat``, or the fact that the reply was not valid JSON) under
a key made of the request itself: messages, schema and options. :class:`Replayer` answers
the same requests with the saved replies, so a change to post-processing is scored in
seconds on exactly what the model said. A request the recording does not hold (the
prompt or the schema changed) raises :class:`NotRecorded`: that change needs a live run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from models.llm_client import LLMClient, LLMOutputError


class NotRecorded(LookupError):
    """The request was never made in the recorded run."""


def request_key(kind: str, messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
    def plain(value: Any) -> Any:
        return asdict(value) if is_dataclass(value) and not isinstance(value, type) else repr(value)

    body = json.dumps({"kind": kind, "messages": messages, "options": options}, sort_keys=True, default=plain)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def json_reply(reply: dict[str, Any]) -> Any:
    """A kept ``chat_json`` reply as the client gives it: a fresh copy (post-processing may
    change it), or the error it was."""
    if "invalid" in reply:
        raise LLMOutputError(reply["invalid"])
    return json.loads(json.dumps(reply["json"]))


class Recorder:
    """An LLM client that passes requests on and keeps the replies.

    With ``resume``, the replies already in ``path`` are kept and answer their requests
    again, so a recording cut short goes on where it stopped instead of starting over."""

    def __init__(self, client: LLMClient, path: Path | None = None, about: dict[str, Any] | None = None,
                 *, resume: bool = False) -> None:
        self.client = client
        self.replies: dict[str, dict[str, Any]] = {}
        self.path, self.about = path, dict(about or {})
        self.reused = 0
        if resume and path is not None and path.exists():
            saved = Replayer(path)
            self.replies = saved.replies
            self.about = {**saved.about, **self.about,
                          "extraction": {**saved.about.get("extraction", {}), **self.about.get("extraction", {})}}

    def _keep(self, key: str, reply: dict[str, Any]) -> None:
        """Keep a reply; with a path, the file is rewritten at once (a run cut short keeps what it got)."""
        self.replies[key] = reply
        if self.path is not None:
            self.save(self.path, self.about)

    def __getattr__(self, name: str) -> Any:  # cloud, base_url, model ...: the wrapped client's
        return getattr(self.client, name)

    def _kept(self, key: str) -> dict[str, Any] | None:
        reply = self.replies.get(key)
        self.reused += reply is not None
        return reply

    async def chat(self, messages: list[dict[str, Any]], **options: Any) -> str:
        key = request_key("chat", messages, options)
        if (kept := self._kept(key)) is not None:
            return kept["text"]
        text = await self.client.chat(messages, **options)
        self._keep(key, {"text": text})
        return text

    async def chat_json(self, messages: list[dict[str, Any]], schema: dict[str, Any], **options: Any) -> Any:
        key = request_key("chat_json", messages, {"schema": schema, **options})
        if (kept := self._kept(key)) is not None:
            return json_reply(kept)
        try:
            value = await self.client.chat_json(messages, schema, **options)
        except LLMOutputError as exc:
            self._keep(key, {"invalid": str(exc)[:300]})
            raise
        self._keep(key, {"json": value})
        return value

    def save(self, path: Path, about: dict[str, Any]) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**about, "replies": self.replies}, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)


class Replayer:
    """Answers the requests of a recorded run with its replies; never calls a model."""

    cloud = False

    def __init__(self, path: Path) -> None:
        saved = json.loads(path.read_text())
        self.about = {k: v for k, v in saved.items() if k != "replies"}
        self.replies: dict[str, dict[str, Any]] = saved["replies"]
        self.base_url, self.model = "replay", str(self.about.get("backend", "replay"))

    def _reply(self, key: str) -> dict[str, Any]:
        if key not in self.replies:
            raise NotRecorded("this request was not made in the recorded run (prompt or schema changed?)")
        return self.replies[key]

    async def chat(self, messages: list[dict[str, Any]], **options: Any) -> str:
        return self._reply(request_key("chat", messages, options))["text"]

    async def chat_json(self, messages: list[dict[str, Any]], schema: dict[str, Any], **options: Any) -> Any:
        return json_reply(self._reply(request_key("chat_json", messages, {"schema": schema, **options})))

    async def close(self) -> None:
        return None
