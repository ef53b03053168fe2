"""Schemathesis against the app's own OpenAPI schema: positive and negative data on every
operation of the memory, ingest and Omi routers, over real HTTP to a real PostgreSQL.
Checks: no 5xx, and every documented response matches its schema. The example budget is
small and fixed (the larger run is ``benchmarks/api_fuzz.py``). Voice and chat routes
need the LLM and are left to their own tests."""

from __future__ import annotations

from tests.web.live import fresh_database, fuzz_api, live_annie

EXAMPLES_PER_MODE = 6


def test_no_input_makes_a_server_error_or_breaks_the_schema(pg_server, model_settings, tmp_path):
    with live_annie(tmp_path / "annie", fresh_database(pg_server), model_settings) as base:
        report = fuzz_api(base, EXAMPLES_PER_MODE)
    assert len(report["operations"]) >= 15, report["operations"]
    assert report["cases"] >= len(report["operations"]) * 2
    assert report["failures"] == [], "\n".join(report["failures"])
    assert report["server_errors"] == 0
