"""The moderation services: permissions, audit records, and what each action does."""

from __future__ import annotations

import pytest

from tests.factories import ask, conversation, events, make_run
from transcripts import ledger, selectors
from transcripts.errors import Conflict, InvalidInput, PermissionDenied, ThreadLocked
from transcripts.events import REDACTED_PARTS
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, Event, Message, Report, Run, Thread
from transcripts.selectors import search_threads, visible_threads

pytestmark = pytest.mark.django_db
SECRET = "hunter2-very-secret-token"


def _secret_thread() -> tuple[Thread, Message]:
    thread = conversation(turns=1)
    ask(thread, "what is my password?")
    run = make_run(
        thread,
        ("reasoning", {"text": f"the password is {SECRET}"}),
        ("text-delta", {"delta": "Your password is "}),
        ("text-delta", {"delta": SECRET}),
        ("tool-call", {"toolCallId": "c1", "toolName": "vault", "input": {"q": SECRET}}),
    )
    return thread, run.messages.get()


def test_it_hides_and_unhides_a_thread_with_audit_records(moderator):
    thread = conversation()
    moderation.hide_thread(user=moderator, thread=thread, reason="spam")
    assert not visible_threads().filter(pk=thread.pk).exists()
    assert visible_threads(include_hidden=True).filter(pk=thread.pk).exists()
    moderation.unhide_thread(user=moderator, thread=thread)
    assert visible_threads().filter(pk=thread.pk).exists()
    actions = list(AuditRecord.objects.order_by("created_at").values_list("action", "reason"))
    assert actions == [("hide", "spam"), ("unhide", "")]
    assert {a.actor_name for a in AuditRecord.objects.all()} == {"moderator"}


def test_a_locked_thread_refuses_new_runs_and_events(moderator):
    thread = conversation()
    open_run, _ = ledger.begin_run(thread=thread)
    moderation.lock_thread(user=moderator, thread=thread, reason="legal hold")
    with pytest.raises(ThreadLocked):
        ledger.begin_run(thread=thread)
    with pytest.raises(ThreadLocked):
        ledger.append_events(run=open_run, events=events(("text-delta", {"delta": "x"})))
    moderation.unlock_thread(user=moderator, thread=thread)
    ledger.append_events(run=open_run, events=events(("text-delta", {"delta": "x"})))


def test_a_viewer_may_not_moderate(viewer):
    thread, message = _secret_thread()
    for action in (
        lambda: moderation.hide_thread(user=viewer, thread=thread),
        lambda: moderation.lock_thread(user=viewer, thread=thread),
        lambda: moderation.flag_message(user=viewer, message=message, reason="x"),
        lambda: moderation.redact_message(user=viewer, message=message, reason="x"),
        lambda: moderation.delete_thread(user=viewer, thread=thread, reason="x"),
    ):
        with pytest.raises(PermissionDenied):
            action()
    thread.refresh_from_db()
    assert not thread.hidden and not thread.locked
    assert not AuditRecord.objects.exists()


def test_a_moderator_may_not_redact_but_an_admin_may(moderator, admin_user):
    _, message = _secret_thread()
    with pytest.raises(PermissionDenied):
        moderation.redact_message(user=moderator, message=message, reason="pii")
    moderation.redact_message(user=admin_user, message=message, reason="pii")


def test_flagging_needs_a_reason_and_is_recorded(moderator):
    _, message = _secret_thread()
    with pytest.raises(InvalidInput):
        moderation.flag_message(user=moderator, message=message, reason="  ")
    moderation.flag_message(user=moderator, message=message, reason="leaks a password")
    message.refresh_from_db()
    assert message.flagged_at is not None and message.flag_reason == "leaks a password"
    moderation.unflag_message(user=moderator, message=message)
    message.refresh_from_db()
    assert message.flagged_at is None
    assert [a.action for a in AuditRecord.objects.order_by("created_at")] == ["flag", "unflag"]


def test_redaction_leaves_no_trace_of_the_text(admin_user):
    thread, message = _secret_thread()
    assert search_threads(Thread.objects.all(), SECRET).exists()
    moderation.redact_message(user=admin_user, message=message, reason="credential leak")

    message.refresh_from_db()
    assert message.parts == REDACTED_PARTS
    assert message.metadata["redacted"] is True
    assert SECRET not in str(Message.objects.filter(thread=thread).values_list("parts", "metadata"))
    assert SECRET not in str(list(Event.objects.filter(thread=thread).values_list("data")))
    assert SECRET not in str([e.as_dict() for e in selectors.replay(run=message.run_id)])
    assert SECRET not in str(selectors.project_run(message.run_id).messages)
    assert not search_threads(Thread.objects.all(), SECRET).exists()
    record = AuditRecord.objects.get(action="redact")
    assert record.reason == "credential leak" and record.details["scrubbedEvents"] == 4


def test_a_redacted_message_projects_to_the_marker_like_the_stored_one(admin_user):
    _, message = _secret_thread()
    moderation.redact_message(user=admin_user, message=message, reason="pii")
    [projected] = selectors.project_run(message.run_id).messages
    assert projected["id"] == message.id
    assert projected["parts"] == REDACTED_PARTS
    assert projected["metadata"]["redacted"] is True


def _failed_secret_run(thread: Thread, status: str = "failed") -> Run:
    run = make_run(
        thread,
        ("reasoning", {"text": f"the password is {SECRET}"}),
        ("text-delta", {"delta": SECRET}),
        ("tool-call", {"toolCallId": "c9", "toolName": "vault", "input": {"q": SECRET}}),
        ("error", {"message": f"upstream echoed {SECRET}"}),
        commit=False,
    )
    if status == "failed":
        return ledger.fail_run(run=run, error=f"model said {SECRET}")
    return ledger.cancel_run(run=run)


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_a_failed_or_cancelled_run_is_redacted_as_a_whole(admin_user, status):
    thread, _ = _secret_thread()
    run = _failed_secret_run(thread, status)
    assert SECRET in str(selectors.project_run(run.id).messages)
    moderation.redact_run(user=admin_user, run=run, reason="credential leak")
    run.refresh_from_db()
    assert SECRET not in str(list(Event.objects.filter(run=run).values_list("data")))
    assert SECRET not in str(run.error)
    assert SECRET not in str([e.as_dict() for e in selectors.replay(run=run.id)])
    projection = selectors.project_run(run.id)
    assert SECRET not in str(projection.messages) + str(projection.errors)
    assert projection.messages[0]["parts"] == REDACTED_PARTS
    assert run.status == status
    record = AuditRecord.objects.get(action="redact", target_type="run")
    assert record.target_id == run.id and record.reason == "credential leak"


def test_only_closed_uncommitted_runs_are_redacted_as_a_whole(admin_user, moderator):
    thread, message = _secret_thread()
    open_run = make_run(thread, ("text-delta", {"delta": SECRET}), commit=False)
    for run in (Run.objects.get(pk=message.run_id), open_run):
        with pytest.raises(Conflict):
            moderation.redact_run(user=admin_user, run=run, reason="pii")
    failed = _failed_secret_run(thread)
    with pytest.raises(PermissionDenied):
        moderation.redact_run(user=moderator, run=failed, reason="pii")
    with pytest.raises(InvalidInput):
        moderation.redact_run(user=admin_user, run=failed, reason=" ")
    assert SECRET in str(list(Event.objects.filter(run=failed).values_list("data")))
    assert not AuditRecord.objects.exists()


def test_redaction_is_irreversible_and_repeating_it_changes_and_records_nothing(admin_user):
    _, message = _secret_thread()
    assert moderation.redact_message(user=admin_user, message=message, reason="pii") is True
    stale = Message.objects.get(pk=message.pk)
    redacted = Message.objects.filter(pk=message.pk).values("parts", "metadata", "redacted_at")
    before = redacted.get()
    assert moderation.redact_message(user=admin_user, message=stale, reason="again") is False
    assert redacted.get() == before and stale.parts == REDACTED_PARTS
    assert list(AuditRecord.objects.values_list("action", "reason")) == [("redact", "pii")]


def test_redaction_keeps_the_other_messages_and_the_tree(admin_user):
    thread, message = _secret_thread()
    before = list(
        Message.objects.filter(thread=thread).order_by("depth").values_list("id", "active")
    )
    question = Message.objects.get(thread=thread, depth=2)
    moderation.redact_message(user=admin_user, message=message, reason="pii")
    after = list(
        Message.objects.filter(thread=thread).order_by("depth").values_list("id", "active")
    )
    assert before == after
    question.refresh_from_db()
    assert question.parts == [{"type": "text", "text": "what is my password?"}]


def test_deleting_a_thread_keeps_its_audit_record(admin_user):
    thread, _ = _secret_thread()
    thread_id = thread.id
    moderation.delete_thread(user=admin_user, thread=thread, reason="user asked (GDPR)")
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert not Run.objects.filter(thread_id=thread_id).exists()
    record = AuditRecord.objects.get(action="delete")
    assert record.thread_id == thread_id and record.reason == "user asked (GDPR)"


def test_a_viewer_reports_and_a_moderator_resolves(viewer, moderator):
    _, message = _secret_thread()
    with pytest.raises(InvalidInput):
        moderation.report_message(user=viewer, message=message, reason="boring")
    report = moderation.report_message(user=viewer, message=message, reason="privacy", note="pw")
    assert Report.objects.filter(status="open").count() == 1
    with pytest.raises(PermissionDenied):
        moderation.close_report(user=viewer, report=report, status="resolved")
    moderation.close_report(user=moderator, report=report, status="resolved", note="redacted")
    report.refresh_from_db()
    assert report.status == "resolved" and report.resolved_by == moderator
    with pytest.raises(Conflict):
        moderation.close_report(user=moderator, report=report, status="dismissed")
    assert [a.action for a in AuditRecord.objects.order_by("created_at")] == [
        "report",
        "resolve_report",
    ]


def test_staff_reading_a_hidden_thread_is_recorded(moderator):
    thread = conversation()
    moderation.record_hidden_view(user=moderator, thread=thread)
    assert not AuditRecord.objects.exists()
    moderation.hide_thread(user=moderator, thread=thread)
    moderation.record_hidden_view(user=moderator, thread=thread)
    assert AuditRecord.objects.filter(action="view_hidden", thread_id=thread.id).count() == 1


# --- no-op actions, and acting on a report -------------------------------------------------


def test_asking_for_the_state_a_thread_or_message_is_in_changes_and_records_nothing(moderator):
    thread, message = _secret_thread()
    assert moderation.hide_thread(user=moderator, thread=thread, reason="spam") is True
    assert moderation.lock_thread(user=moderator, thread=thread, reason="hold") is True
    assert moderation.flag_message(user=moderator, message=message, reason="pii") is True
    flagged_at = Message.objects.get(pk=message.pk).flagged_at
    records = AuditRecord.objects.count()
    stale_thread = Thread.objects.get(pk=thread.pk)
    stale_message = Message.objects.get(pk=message.pk)
    assert moderation.hide_thread(user=moderator, thread=stale_thread, reason="again") is False
    assert moderation.lock_thread(user=moderator, thread=stale_thread, reason="again") is False
    assert moderation.flag_message(user=moderator, message=stale_message, reason="x") is False
    assert AuditRecord.objects.count() == records
    message.refresh_from_db()
    assert (message.flagged_at, message.flag_reason) == (flagged_at, "pii")
    other, other_message = _secret_thread()
    assert moderation.unhide_thread(user=moderator, thread=other) is False
    assert moderation.unlock_thread(user=moderator, thread=other) is False
    assert moderation.unflag_message(user=moderator, message=other_message) is False
    assert AuditRecord.objects.count() == records


def _reported(reporter, message: Message) -> Report:
    return moderation.report_message(user=reporter, message=message, reason="privacy", note="pw")


def test_acting_on_a_report_resolves_it_in_the_same_transaction(viewer, moderator):
    thread, message = _secret_thread()
    report = _reported(viewer, message)
    outcome = moderation.act_on_report(
        user=moderator, report=report, action="hide", reason="Report: leaks a password"
    )
    assert outcome.changed and outcome.report.status == "resolved"
    thread.refresh_from_db()
    report.refresh_from_db()
    assert thread.hidden and report.resolved_by == moderator
    assert report.resolution_note == "Report: leaks a password"
    assert list(AuditRecord.objects.order_by("id").values_list("action", "reason")) == [
        ("report", "privacy"),
        ("hide", "Report: leaks a password"),
        ("resolve_report", "Report: leaks a password"),
    ]


def test_an_action_without_resolve_leaves_the_report_open(viewer, moderator):
    _, message = _secret_thread()
    report = _reported(viewer, message)
    outcome = moderation.act_on_report(
        user=moderator, report=report, action="flag", reason="pii", resolve=False
    )
    assert outcome.changed and Report.objects.get().status == "open"
    assert Message.objects.get(pk=message.pk).flagged_at is not None


def test_a_no_op_action_on_a_report_writes_nothing_and_keeps_it_open(viewer, moderator):
    thread, message = _secret_thread()
    moderation.lock_thread(user=moderator, thread=thread, reason="hold")
    report = _reported(viewer, message)
    records = AuditRecord.objects.count()
    outcome = moderation.act_on_report(user=moderator, report=report, action="lock", reason="x")
    assert not outcome.changed and outcome.report.status == "open"
    assert AuditRecord.objects.count() == records
    assert Report.objects.get().status == "open"


def test_a_failed_resolve_rolls_the_action_back(viewer, moderator):
    thread, message = _secret_thread()
    report = _reported(viewer, message)
    moderation.close_report(user=moderator, report=report, status="dismissed")
    records = AuditRecord.objects.count()
    with pytest.raises(Conflict):
        moderation.act_on_report(user=moderator, report=report, action="hide", reason="x")
    thread.refresh_from_db()
    assert not thread.hidden and AuditRecord.objects.count() == records
    # Without resolving, a closed report's thread can still be acted on.
    outcome = moderation.act_on_report(
        user=moderator, report=report, action="hide", reason="x", resolve=False
    )
    assert outcome.changed and Thread.objects.get(pk=thread.pk).hidden


def test_a_redaction_from_a_report_needs_an_admin_and_resolves_it_with_the_redaction(
    viewer, moderator, admin_user
):
    _, message = _secret_thread()
    report = _reported(viewer, message)
    with pytest.raises(PermissionDenied):
        moderation.act_on_report(user=moderator, report=report, action="redact", reason="pii")
    assert Report.objects.get().status == "open" and SECRET in str(
        Message.objects.get(pk=message.pk).parts
    )
    with pytest.raises(InvalidInput):
        moderation.act_on_report(user=admin_user, report=report, action="redact", reason=" ")
    outcome = moderation.act_on_report(
        user=admin_user, report=report, action="redact", reason="credential"
    )
    assert outcome.changed and outcome.report.status == "resolved"
    assert SECRET not in str(Message.objects.get(pk=message.pk).parts)
    assert [a for a in AuditRecord.objects.order_by("id").values_list("action", flat=True)] == [
        "report",
        "redact",
        "resolve_report",
    ]


def test_acting_on_a_report_needs_a_moderator_and_a_known_action(viewer, moderator):
    thread, message = _secret_thread()
    report = _reported(viewer, message)
    with pytest.raises(PermissionDenied):
        moderation.act_on_report(user=viewer, report=report, action="hide", reason="x")
    with pytest.raises(InvalidInput):
        moderation.act_on_report(user=moderator, report=report, action="delete", reason="x")
    assert not Thread.objects.get(pk=thread.pk).hidden
    assert Report.objects.get().status == "open"
