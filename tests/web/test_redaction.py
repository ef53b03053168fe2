"""No log line carries the access token, an Omi secret or a signature (access log included)."""

from __future__ import annotations

import asyncio
import io
import logging
import time

import httpx
import uvicorn

from ingest.omi import SIGNATURE_HEADER, sign
from ingest.service import IngestService
from models.process import free_port
from tests.ingest.helpers import DEVICE_SECRET, UID, build_app, settings_for
from web.redact import Redactor, install_redaction

TOKEN = "tok-SECRET-value-123456"
WEBHOOK = "hook-SECRET-value-987654"


def test_the_patterns_mask_query_values_and_headers():
    redact = Redactor()
    line = ('127.0.0.1:5 - "POST /v1/omi/audio?uid=a&secret=abc123&sample_rate=16000 HTTP/1.1" 200 '
            "token=xyz987 {'x-omi-signature': 't=1,v1=00ff00ff00ff00ff'} X-Internal-Token: qwerty99")
    masked = redact(line)
    for secret in ("abc123", "xyz987", "00ff00ff00ff00ff", "qwerty99"):
        assert secret not in masked
    assert "sample_rate=16000" in masked and "uid=a" in masked


async def test_no_log_line_carries_a_secret(tmp_path, model_settings):
    install_redaction([TOKEN, DEVICE_SECRET, WEBHOOK])
    settings = settings_for(tmp_path, preload_models=False)
    service = IngestService(settings, model_settings)
    await service.start()
    app = build_app(service, token=TOKEN)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info")  # uvicorn's own log setup
    captured = io.StringIO()
    handler = logging.StreamHandler(captured)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    watched = [logging.getLogger(name) for name in ("", "uvicorn.access", "uvicorn.error", "ingest.api")]
    for logger in watched:
        logger.addHandler(handler)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base) as client:
            tone = b"\x10\x00" * 800
            params = {"uid": UID, "secret": DEVICE_SECRET, "sample_rate": 16000}
            octet = {"Content-Type": "application/octet-stream"}
            assert (await client.post("/v1/omi/audio", params=params, content=tone, headers=octet)).status_code == 200
            unknown = {**params, "uid": "stranger"}
            assert (await client.post("/v1/omi/audio", params=unknown, content=tone, headers=octet)).status_code == 401
            signed = {SIGNATURE_HEADER: sign(WEBHOOK, UID, tone, int(time.time())), **octet}
            await client.post("/v1/omi/audio", params={"uid": UID, "sample_rate": 16000}, content=tone, headers=signed)
            await client.get("/v1/enrollment", params={"token": TOKEN})
            await client.get("/v1/enrollment", headers={"X-Internal-Token": TOKEN})
        logging.getLogger("ingest.api").warning("header was %s and url ?secret=%s", signed, DEVICE_SECRET)
    finally:
        server.should_exit = True
        await serving
        for logger in watched:
            logger.removeHandler(handler)
        await service.close()
    text = captured.getvalue()
    assert "POST /v1/omi/audio" in text and "GET /v1/enrollment" in text, text  # the access log was seen
    for secret in (TOKEN, DEVICE_SECRET, signed[SIGNATURE_HEADER].split("v1=")[1]):
        assert secret not in text, text
