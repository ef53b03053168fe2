"""One OpenAI-compatible client for every LLM call in Annie.

It speaks to whatever the runtime chose (the managed llama-server, Ollama's ``/v1``
or another configured endpoint). Besides plain and streamed chat it offers
:meth:`LLMClient.chat_json`, a completion constrained by a JSON schema and validated
against it before it is returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import jsonschema
from openai import AsyncOpenAI, DefaultAsyncHttpx2Client

# An idle pooled connection is dropped after this many seconds. llama-server closes
# idle keep-alive connections after 5 s, the HTTP library's own default: a request sent
# on a connection the server was closing at that moment failed with "Server disconnected"
# (seen on the first chat after a quiet spell). Reconnecting on loopback costs nothing.
KEEPALIVE_S = 2.0

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


@dataclass(frozen=True)
class Repetition:
    """Penalties against a model repeating itself, for free text (summaries, replies).

    llama-server takes ``repeat_penalty`` over the last ``last_n`` tokens; other
    OpenAI-compatible servers (Ollama's ``/v1``, a cloud API) get the standard
    ``frequency_penalty``. Not for JSON replies: there a penalty on repeated tokens
    pushes an enum value ("open", "person") to another one."""

    repeat_penalty: float = 1.15
    last_n: int = 256
    frequency_penalty: float = 0.4


class LLMOutputError(ValueError):
    """The model answered, but not with what was asked for."""


def strip_wrappers(text: str) -> str:
    """Remove ``<think>`` blocks and a surrounding code fence."""
    return _FENCE.sub("", _THINK.sub("", text).strip()).strip()


def parse_json_reply(text: str, schema: dict[str, Any]) -> Any:
    """The JSON value in a model's reply, validated against ``schema``."""
    try:
        value = json.loads(strip_wrappers(text))
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"the model did not return JSON: {exc}: {text[:200]!r}") from exc
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        raise LLMOutputError(f"the model's JSON does not fit the schema: {exc.message}") from exc
    return value


def server_timings(chunk: Any) -> dict[str, float]:
    """What llama-server says about a streamed call in its last chunk: ``prompt_tokens``
    (read this time), ``cached_tokens`` (reused from its prompt cache), ``prompt_ms`` and
    ``generated_tokens``, and with speculative decoding ``drafted_tokens`` and
    ``draft_accepted``; empty for servers that do not report them (Ollama, cloud APIs)."""
    timings = (getattr(chunk, "model_extra", None) or {}).get("timings")
    if not isinstance(timings, dict):
        return {}
    names = {"prompt_n": "prompt_tokens", "cache_n": "cached_tokens", "prompt_ms": "prompt_ms",
             "predicted_n": "generated_tokens", "draft_n": "drafted_tokens", "draft_n_accepted": "draft_accepted"}
    return {ours: float(timings[theirs]) for theirs, ours in names.items()
            if isinstance(timings.get(theirs), int | float)}


class LLMClient:
    def __init__(self, base_url: str, model: str, api_key: str = "local", timeout: float = 120.0, *,
                 cloud: bool | None = None, native_penalties: bool = False):
        self.base_url = base_url
        self.model = model
        # Whether the endpoint runs off this machine, when the owner declared it (None:
        # decided from the URL's host; see memory.disclosure).
        self.cloud = cloud
        self.native_penalties = native_penalties  # the server takes llama.cpp's repeat_penalty
        http = DefaultAsyncHttpx2Client(timeout=timeout, limits=httpx2.Limits(
            max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_S))
        # One retry: a request on a connection the server dropped (right after a voice turn
        # was cancelled mid-stream) failed with "Server disconnected" before any reply.
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=1,
                                   http_client=http)

    @property
    def openai(self) -> AsyncOpenAI:
        return self._client

    def _penalties(self, repetition: Repetition | None) -> dict[str, Any]:
        if repetition is None:
            return {}
        if self.native_penalties:
            return {"extra_body": {"repeat_penalty": repetition.repeat_penalty, "repeat_last_n": repetition.last_n}}
        return {"frequency_penalty": repetition.frequency_penalty}

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
        repetition: Repetition | None = None,
        **extra: Any,
    ) -> str:
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=max_tokens,
            temperature=temperature,
            **self._penalties(repetition),
            **extra,
        )
        return response.choices[0].message.content or ""

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
        stats: dict[str, Any] | None = None,
        repetition: Repetition | None = None,
        **extra: Any,
    ) -> AsyncIterator[str]:
        """The reply's text as it comes. ``stats``, if given, receives what the server
        reports about the call (llama-server: prompt tokens read, tokens served from its
        prompt cache, milliseconds), see :func:`server_timings`."""
        stream = await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stream=True,
            **self._penalties(repetition),
            **extra,
        )
        try:
            async for chunk in stream:
                if stats is not None:
                    stats.update(server_timings(chunk))
                if chunk.choices and (delta := chunk.choices[0].delta.content):
                    yield delta
        finally:
            # Stopped early (barge-in, a caller that has enough): close the HTTP stream
            # now, so the server stops generating and the connection is not left half-read.
            await stream.close()

    async def chat_json(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        *,
        name: str = "result",
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> Any:
        """A completion constrained by ``schema``; the parsed, validated value."""
        text = await self.chat(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            },
        )
        return parse_json_reply(text, schema)

    async def close(self) -> None:
        await self._client.close()
