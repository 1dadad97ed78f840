"""Property-based: schemathesis against the app's own OpenAPI schema: no 5xx, conforming answers."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import make_run, make_thread
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


@schemathesis.serializer("text/event-stream")
def _event_stream(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    return value.encode() if isinstance(value, str) else str(value).encode()


# The schema the app serves, called in-process through Django's WSGI handler.
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """As Django's test client does: requests must not close the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(db) -> str:
    return issue_token(project=default_project(), name="schemathesis", scopes=["ingest", "read"])[1]


@pytest.fixture
def real_ids(db) -> dict[str, str]:
    run = make_run(make_thread(), ("text-delta", {"delta": "hi"}), commit=False)
    return {"threadId": run.thread_id, "runId": run.id}


@schema.parametrize()
@EXAMPLES
@pytest.mark.django_db
def test_no_generated_request_breaks_the_api(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)


@schema.parametrize()
@EXAMPLES
@pytest.mark.django_db
def test_no_generated_request_against_real_ids_breaks_the_api(case, token, real_ids):
    for name, value in real_ids.items():
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = value
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)


@pytest.fixture
def ingest_only_token(db) -> str:
    return issue_token(project=default_project(), name="agent", scopes=["ingest"])[1]


@schema.parametrize()
@EXAMPLES
@pytest.mark.django_db
def test_an_ingest_only_tokens_answers_conform_too(case, ingest_only_token, real_ids):
    # Ids and statuses instead of content: the answers still match the published schema.
    for name, value in real_ids.items():
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = value
    case.call_and_validate(headers={"Authorization": f"Bearer {ingest_only_token}"}, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_no_generated_request_gets_anything_without_a_token(case):
    response = case.call(headers={})
    assert response.status_code in (401, 405)  # a method the path lacks says nothing either
    assert set(response.json()["error"]) == {"code", "message", "details"}
