"""A cloud LLM for tests: a local HTTP server speaking the OpenAI chat-completions API.

It is the one test double the architecture allows (the machine cannot reach a cloud
API), and it works at the protocol level: ``GET /v1/models``, ``POST /v1/chat/completions``
plain, JSON-schema constrained (``response_format``) and streamed as server-sent events.
Every request body is recorded, so a test can read exactly what a cloud provider would
have received. Its replies are a scripted model's: ``replies`` maps a schema name
(``memory`` for extraction, ``action`` and ``arguments`` for tool routing) to a function
of the request giving the JSON reply; any other request gets ``answer``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], Any]


class CloudLLM:
    def __init__(self, replies: dict[str, Reply], answer: str) -> None:
        self.replies = replies
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> CloudLLM:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def recorded(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def prompts(self) -> list[str]:
        """The text of every message of every recorded request, one string per request."""
        return ["\n".join(str(m.get("content") or "") for m in r.get("messages", [])) for r in self.recorded()]

    def _reply_text(self, request: dict[str, Any]) -> str:
        schema = (request.get("response_format") or {}).get("json_schema") or {}
        reply = self.replies.get(schema.get("name", ""))
        return json.dumps(reply(request)) if reply is not None else self.answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        cloud = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _json(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the http.server interface
                if self.path.rstrip("/").endswith("/models"):
                    self._json({"object": "list", "data": [{"id": "cloud-model", "object": "model"}]})
                else:
                    self.send_error(404)

            def do_POST(self) -> None:  # noqa: N802 - the http.server interface
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404)
                    return
                with cloud._lock:
                    cloud.requests.append(request)
                text = cloud._reply_text(request)
                model = request.get("model", "cloud-model")
                if not request.get("stream"):
                    self._json({"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": model,
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": text}}]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                words = text.split(" ")
                for i, word in enumerate(words):
                    delta = word if i == len(words) - 1 else word + " "
                    self._event({"choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]},
                                model)
                self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, model)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _event(self, chunk: dict[str, Any], model: str) -> None:
                body = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model, **chunk}
                self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
                self.wfile.flush()

            def log_message(self, *args) -> None:
                pass

        return Handler
