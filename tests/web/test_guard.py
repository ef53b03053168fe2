"""The smaller holes: schema behind the token, page headers, Host guard, token in the query."""

from __future__ import annotations

from tests.web.conftest import TOKEN

AUTH = {"X-Internal-Token": TOKEN}
EVENT_STREAM = {"Accept": "text/event-stream"}


async def test_the_openapi_schema_needs_the_token(web_client):
    assert (await web_client.get("/openapi.json")).status_code == 401
    schema = await web_client.get("/openapi.json", headers=AUTH)
    assert schema.status_code == 200 and "/v1/context" in schema.json()["paths"]
    assert (await web_client.get("/docs")).status_code in (404, 405)


async def test_the_page_and_the_api_send_security_headers(web_client):
    for path in ("/", "/health", "/v1/stats"):
        response = await web_client.get(path)
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"], path
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"


async def test_an_unknown_host_is_refused(web_client):
    for host in ("evil.example", "evil.example:7860", "127.0.0.1.evil.example", ""):
        response = await web_client.get("/health", headers={"Host": host})
        assert response.status_code == 421, host
        assert "ANNIE_ALLOWED_HOSTS" in response.json()["detail"]
    # An address is no DNS-rebinding vector: a phone on the LAN posts to the computer's address.
    for host in ("localhost:7860", "127.0.0.1", "[::1]:7860", "LOCALHOST", "192.168.1.20:7860", "[fe80::1]"):
        assert (await web_client.get("/health", headers={"Host": host})).status_code == 200, host


async def test_the_token_in_the_query_works_only_for_event_streams(web_client):
    forged = await web_client.post("/v1/ingest/s1", params={"token": TOKEN})
    assert forged.status_code == 401
    plain_get = await web_client.get("/v1/stats", params={"token": TOKEN})
    assert plain_get.status_code == 401
    # Asking for an event stream is not enough: the route must be one (a cross-site fetch may set Accept).
    asked = await web_client.get("/v1/stats", params={"token": TOKEN}, headers=EVENT_STREAM)
    assert asked.status_code == 401
    assert (await web_client.get("/v1/stats", headers=AUTH)).status_code == 200
