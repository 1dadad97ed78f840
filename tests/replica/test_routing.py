"""Which database each read and write goes to, decided without a replica running (the world of
test_replica.py proves the same with a real one)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from transcripts.db_router import ReadRouting, ReplicaRouter, current_routing
from transcripts.models import ApiToken, Membership, Message, Thread
from transcripts.read_your_writes import (
    PRIMARY_COOKIE,
    PRIMARY_HEADER,
    ReadYourWritesMiddleware,
    may_read_replica,
)

factory = RequestFactory()
router = ReplicaRouter()


def test_plain_reads_may_use_the_replica() -> None:
    assert may_read_replica(factory.get("/"))
    assert may_read_replica(factory.head("/api/v1/threads"))


def test_writes_streams_and_clients_that_wrote_read_the_primary() -> None:
    assert not may_read_replica(factory.post("/t/x/reply/"))
    assert not may_read_replica(factory.delete("/api/v1/threads/x"))
    assert not may_read_replica(factory.get("/api/v1/runs/x/stream"))
    wrote = factory.get("/")
    wrote.COOKIES[PRIMARY_COOKIE] = "1"
    assert not may_read_replica(wrote)
    assert not may_read_replica(factory.get("/", headers={PRIMARY_HEADER: "primary"}))


def test_reads_outside_a_request_use_the_primary() -> None:
    assert current_routing.get() is None
    assert router.db_for_read(Thread) == "default"


def test_a_write_sends_the_rest_of_the_request_to_the_primary() -> None:
    routing = ReadRouting(replica_allowed=True, replica_answers=True)
    token = current_routing.set(routing)
    try:
        assert router.db_for_read(Message) == "replica"
        assert router.db_for_write(Thread) == "default"
        assert routing.wrote
        assert router.db_for_read(Message) == "default"
    finally:
        current_routing.reset(token)


def test_recording_a_token_use_is_not_a_write_the_client_reads_back() -> None:
    routing = ReadRouting(replica_allowed=True, replica_answers=True)
    token = current_routing.set(routing)
    try:
        router.db_for_write(ApiToken)
        assert not routing.wrote
    finally:
        current_routing.reset(token)


def test_who_may_read_is_always_read_from_the_primary() -> None:
    routing = ReadRouting(replica_allowed=True, replica_answers=True)
    token = current_routing.set(routing)
    try:
        for model in (Session, get_user_model(), ApiToken, Membership):
            assert router.db_for_read(model) == "default"
    finally:
        current_routing.reset(token)


@pytest.mark.django_db(transaction=True)
def test_reads_inside_a_transaction_use_the_primary() -> None:
    routing = ReadRouting(replica_allowed=True, replica_answers=True)
    token = current_routing.set(routing)
    try:
        with transaction.atomic():
            assert router.db_for_read(Thread) == "default"
    finally:
        current_routing.reset(token)


def test_a_replica_down_sends_reads_to_the_primary() -> None:
    routing = ReadRouting(replica_allowed=True, replica_answers=False)
    token = current_routing.set(routing)
    try:
        assert router.db_for_read(Thread) == "default"
    finally:
        current_routing.reset(token)


def test_migrations_run_only_on_the_primary() -> None:
    assert router.allow_migrate("default", "transcripts")
    assert not router.allow_migrate("replica", "transcripts")


def test_a_request_that_wrote_marks_its_client_for_the_primary() -> None:
    def writes(request: HttpRequest) -> HttpResponse:
        router.db_for_write(Thread)
        return HttpResponse("ok")

    response = ReadYourWritesMiddleware(writes)(factory.get("/"))
    assert response.cookies[PRIMARY_COOKIE].value == "1"
    assert response.cookies[PRIMARY_COOKIE]["max-age"] == 5
    assert response.cookies[PRIMARY_COOKIE]["httponly"]


def test_a_plain_read_leaves_its_client_on_the_replica() -> None:
    def reads(request: HttpRequest) -> HttpResponse:
        routing = current_routing.get()
        assert routing is not None and routing.replica_allowed
        return HttpResponse("ok")

    response = ReadYourWritesMiddleware(reads)(factory.get("/"))
    assert PRIMARY_COOKIE not in response.cookies
    assert current_routing.get() is None


def test_every_post_marks_its_client_for_the_primary() -> None:
    response = ReadYourWritesMiddleware(lambda request: HttpResponse("ok"))(factory.post("/"))
    assert PRIMARY_COOKIE in response.cookies
