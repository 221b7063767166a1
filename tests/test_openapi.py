"""The HTTP contract: schemathesis against the API's own OpenAPI schema, served by the real uvicorn server over a
real lake; the schema of what the generated cases do not reach; a worker's own HTTP server.

Every operation is called with generated requests; the checks are schemathesis' defaults: no 5xx, and
responses conform to the schema (status codes, content types, bodies). (Driven through schemathesis'
hypothesis strategies rather than its pytest plugin, which does not run under pytest 9.)"""

from __future__ import annotations

import threading
import time

import httpx
import jsonschema
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, given, settings
from prometheus_client.parser import text_string_to_metric_families
from schemathesis.checks import not_a_server_error, positive_data_acceptance

from api.app import create_worker_app
from schemas.settings import Settings
from tests.test_api import Server, api, lake  # noqa: F401  (the module-scoped fixtures)


@pytest.fixture(scope="module")
def api_schema(lake):  # noqa: F811
    root, _ = lake
    with Server(Settings(lake=str(root), api_max_scan_days=3650, sql_timeout_s=5)) as client:
        yield schemathesis.openapi.from_url(f"{client.base_url}/openapi.json")


def test_api_conforms_to_its_schema(api_schema):
    checked = []
    for result in api_schema.get_all_operations():
        op = result.ok()

        # Documented server-side rules that a JSON schema cannot express, answered 400/422 with the reason:
        # GET /events refuses a query that would scan too many days of the whole fleet, POST /sql any query
        # that is not one read-only SELECT, GET /incidents a cursor it did not issue (cursors are opaque),
        # GET /reports/degraded-links a date the calendar does not have (2026-02-30T03) or outside 2000-2100;
        # and every route with `since` and `until` a `since` after `until`; every route with `host` a text no host
        # name can be (`-`, `None`, dots alone, control characters: ``api.app._host``, a 422)
        excluded = [positive_data_acceptance] if op.path in ("/events", "/sql", "/incidents", "/links",
                                                             "/reports/degraded-links",
                                                             "/hosts/{host}/timeline") else []

        @given(case=op.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            case.call_and_validate(excluded_checks=excluded)

        check()
        checked.append(f"{op.method.upper()} {op.path}")
    assert {"GET /incidents", "GET /incidents/{incident_id}", "GET /events", "GET /links", "POST /sql",
            "GET /hosts/{host}/timeline", "GET /healthz", "GET /reports/degraded-links"} <= set(checked)


def test_public_routes_document_no_401(lake):  # noqa: F811
    """/healthz and /metrics need no token: the schema listed a 401 for them, from the app's default responses (a
    break-it pass); a route behind the token lists it."""
    root, _ = lake
    with Server(Settings(lake=str(root), api_token="s3cret")) as client:
        paths = client.get("/openapi.json").json()["paths"]
    assert "401" not in paths["/healthz"]["get"]["responses"] and "401" not in paths["/metrics"]["get"]["responses"]
    assert "401" in paths["/incidents"]["get"]["responses"]


def test_an_unhealthy_healthz_conforms_to_its_schema(lake):  # noqa: F811
    """/healthz's 503 is the Healthz body (application/json, status ``unhealthy`` and the reason), as its route
    declares: the schema said application/problem+json with the Problem shape (every error status was documented as
    a Problem, over the route's own model), so a client made from the schema could not read why the service was
    unhealthy; schemathesis, run above against a healthy server, never saw a 503 (a break-it pass)."""
    root, _ = lake
    why = {"ok": False, "reason": "ingest cannot store: lake not writable"}
    with Server(Settings(lake=str(root)), health=lambda: why) as client:
        schema = schemathesis.openapi.from_url(f"{client.base_url}/openapi.json")
        documented = schema.raw_schema["paths"]["/healthz"]["get"]["responses"]["503"]["content"]
        # a 503 is what this server should answer: every other check (status documented, content type, body)
        response = schema["/healthz"]["GET"].Case().call_and_validate(excluded_checks=[not_a_server_error])
    assert response.status_code == 503 and response.json()["reason"] == why["reason"]
    assert list(documented) == ["application/json"]


#: the forms of a time the query routes take (README "HTTP API"; api.app._from_day and _time)
TIME_FORMS = ("2026-12-01T03:12:00Z", "2026-12-01T03:12:00", "20261201T031200Z", "2026-12-01", "20261201",
              "1764558720", "1764558720.5", "0")


def test_the_schema_of_since_and_until_takes_every_form_the_api_takes(api):  # noqa: F811
    """``since`` and ``until`` were documented as ``format: date-time`` (RFC 3339), so a client or gateway that
    validates requests against the schema refused the Unix seconds, bare dates and offset-less times the API takes
    (README "HTTP API"), and schemathesis' negative-data check saw ``until=0`` "accepted against the schema" (a
    break-it pass). Each form is answered 200 by the real server and conforms to each route's parameter schema."""
    spec = api.get("/openapi.json").json()
    params = [(path, p) for path, item in spec["paths"].items() for p in item.get("get", {}).get("parameters", [])
              if p["name"] in ("since", "until")]
    assert {path for path, _ in params} >= {"/incidents", "/events", "/hosts/{host}/timeline"}
    for path, p in params:
        validator = jsonschema.Draft202012Validator(p["schema"], format_checker=jsonschema.FormatChecker())
        for v in TIME_FORMS:
            query = {p["name"]: v, "host": "node004"} if path == "/events" else {p["name"]: v}
            r = api.get(path.replace("{host}", "node004"), params=query)
            assert r.status_code == 200, (path, v, r.text)
            assert validator.is_valid(v), (path, p["name"], v, p["schema"])


def test_a_workers_errors_are_problems_as_the_apis():
    """An ingest or correlate worker's own HTTP server (``--port``) answers a wrong path or method as RFC 9457
    ``application/problem+json``, as the API does (README "HTTP API"); it answered FastAPI's ``{"detail": "Not
    Found"}`` as application/json (a break-it pass). Its /metrics parses as Prometheus text, each family documented.
    A real uvicorn server of ``create_worker_app``; the worker's health is a stub (no broker: what is tested is the
    HTTP surface)."""
    import ingest.metrics

    app = create_worker_app("ingest", lambda: {"ok": True, "reason": ""}, (ingest.metrics,))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        while not server.started:
            time.sleep(0.02)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        for method, path, status in (("GET", "/nope", 404), ("POST", "/metrics", 405)):
            r = httpx.request(method, base + path)
            assert (r.status_code, r.headers["content-type"]) == (status, "application/problem+json"), r.text
            assert r.json()["status"] == status and r.json()["instance"] == path
        text = httpx.get(base + "/metrics").text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert {"firstfault_lines", "firstfault_ingest_healthy", "firstfault_batch_seconds"} <= set(families)
        assert all(f.documentation for f in families.values())
    finally:
        server.should_exit = True
        t.join(10)


def test_the_schemas_are_valid_openapi(api):  # noqa: F811
    """The API's /openapi.json, as the server serves it, and a worker's are valid OpenAPI 3.1 documents
    (openapi-spec-validator): ``_problem_openapi`` rewrites the generated one by hand, which neither FastAPI nor
    schemathesis' case generation checks."""
    import ingest.metrics

    from openapi_spec_validator import validate

    spec = api.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    validate(spec)
    validate(create_worker_app("ingest", lambda: {"ok": True}, (ingest.metrics,)).openapi())
