"""Migrates the fault tests' own PostgreSQL (DATABASE_URL) and creates what they act on; run
in a subprocess (`python -m tests.faults.seed`), it prints the ids as JSON."""

from __future__ import annotations

import json


def main() -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from transcripts import ledger
    from transcripts.ledger.projects import create_project, set_member
    from transcripts.ledger.tokens import issue_token
    from transcripts.models import Message

    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    # A superuser already exists, so `serve` never writes a password file for this database.
    users.create_superuser("admin", "admin@localhost", "admin-password")
    editor = users.create_user("editor", password="editor-password")
    project = create_project(slug="faults")
    set_member(project=project, user=editor, role="editor")
    _, token = issue_token(name="faults", scopes=["ingest", "read"], project=project)
    thread, _ = ledger.create_thread(project=project, title="faults")
    for kind, data in (
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Tell me a story"}]}),
        ("text-delta", {"delta": "Once upon a time."}),
    ):
        run, _ = ledger.begin_run(thread=thread)
        ledger.append_events(run=run, events=[{"seq": 1, "kind": kind, "data": data}])
        ledger.commit_run(run=run)
    answer = Message.objects.get(thread=thread, role="assistant", active=True)
    print(json.dumps({"thread": thread.id, "answer": answer.id, "token": token}))


if __name__ == "__main__":
    main()
