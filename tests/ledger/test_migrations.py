"""The projects migration puts existing data into `default` and turns groups into roles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("transcripts", "0004_import_jobs")]
AFTER = [("transcripts", "0007_project_required")]


@pytest.fixture
def executor(transactional_db: None) -> Iterator[MigrationExecutor]:
    """A migration executor; the schema is put back to the latest state afterwards."""
    executor = MigrationExecutor(connection)
    yield executor
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def _apps(executor: MigrationExecutor, target: list[tuple[str, str]]) -> Any:
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def test_existing_threads_tokens_and_people_move_into_the_default_project(
    executor: MigrationExecutor,
) -> None:
    old = _apps(executor, BEFORE)
    User, Group = old.get_model("auth", "User"), old.get_model("auth", "Group")
    groups = {name: Group.objects.create(name=name) for name in ("Viewers", "Moderators", "Admins")}
    people = {
        name: User.objects.create(username=name, is_active=True)
        for name in ("vera", "mo", "ada", "eddie", "root", "gone")
    }
    people["vera"].groups.add(groups["Viewers"])
    people["mo"].groups.add(groups["Moderators"])
    people["ada"].groups.add(groups["Admins"], groups["Viewers"])
    User.objects.filter(username="root").update(is_superuser=True)
    User.objects.filter(username="gone").update(is_active=False)
    Thread, Run = old.get_model("transcripts", "Thread"), old.get_model("transcripts", "Run")
    thread = Thread.objects.create(title="from before projects")
    Run.objects.create(thread=thread, generator="demo")
    Run.objects.create(thread=thread, generator="my-agent")
    Run.objects.create(thread=thread, generator="import")
    old.get_model("transcripts", "ApiToken").objects.create(
        name="agent", prefix="tr_x", token_hash="h" * 64, scopes=["ingest"]
    )
    old.get_model("transcripts", "AuditRecord").objects.create(
        action="hide", target_type="thread", target_id=thread.id, thread_id=thread.id
    )

    new = _apps(executor, AFTER)

    default = new.get_model("transcripts", "Project").objects.get()
    assert (default.slug, default.name) == ("default", "Default")
    assert new.get_model("transcripts", "Thread").objects.get().project_id == default.pk
    assert new.get_model("transcripts", "ApiToken").objects.get().project_id == default.pk
    assert new.get_model("transcripts", "AuditRecord").objects.get().project_id == default.pk
    origins = dict(new.get_model("transcripts", "Run").objects.values_list("generator", "origin"))
    assert origins == {"demo": "web", "my-agent": "api", "import": "import"}
    roles = dict(
        new.get_model("transcripts", "Membership").objects.values_list("user__username", "role")
    )
    # Everyone could act before: plain accounts become editors; superusers need no membership.
    assert roles == {"vera": "viewer", "mo": "moderator", "ada": "admin", "eddie": "editor"}
    assert not new.get_model("auth", "Group").objects.filter(name__in=groups).exists()
