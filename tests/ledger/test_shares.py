"""Share links in the ledger: created for one branch with a secret stored hashed, revoked once,
each expiry audited once by the sweep; resolved only while live and visible."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts import ledger, selectors
from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.ledger import moderation
from transcripts.ledger.deletion import delete_threads
from transcripts.models import AuditRecord, Message, Project, ShareLink, Thread
from transcripts.selectors.shares import secret_hash
from transcripts.worker.sweeps import sweep

pytestmark = pytest.mark.django_db


@dataclass
class Branched:
    """A thread whose answer was regenerated: the first answer is the alternative."""

    thread: Thread
    prompt: Message
    first: Message  # superseded, off the active path
    second: Message  # active, the head


def branched_thread(project: Project, title: str = "Capitals") -> Branched:
    """A question answered twice: two sibling answers, the second one active."""
    thread = make_thread(title, project=project)
    prompt = last_message(ask(thread, "Which city is the capital of France?"))
    first = last_message(say(thread, "Marseille, said the first answer"))
    second = last_message(say(thread, "Paris, said the second answer", fork_from=prompt.id))
    thread.refresh_from_db()
    return Branched(thread, prompt, first, second)


def test_a_link_ends_at_the_head_by_default_and_keeps_only_the_secrets_hash(team: Team) -> None:
    b = branched_thread(team.alpha)

    share, secret = ledger.create_share(thread=b.thread, user=team.editor)

    assert share.leaf_id == b.second.id
    assert len(secret) == 43  # 256 random bits, URL-safe
    stored = ShareLink.objects.get(pk=share.pk)
    assert stored.secret_hash == secret_hash(secret) != secret
    assert secret not in str(ShareLink.objects.filter(pk=share.pk).values().get())
    assert stored.created_by == team.editor
    assert stored.project_id == team.alpha.pk


def test_two_links_never_share_a_secret(team: Team) -> None:
    b = branched_thread(team.alpha)

    secrets = {ledger.create_share(thread=b.thread, user=team.editor)[1] for _ in range(20)}

    assert len(secrets) == 20


def test_the_shared_path_is_exactly_the_chosen_branch(team: Team) -> None:
    b = branched_thread(team.alpha)
    share, secret = ledger.create_share(thread=b.thread, user=team.editor, leaf_id=b.first.id)

    resolved = selectors.resolve_share(secret)

    assert resolved is not None and resolved.pk == share.pk
    assert [m.id for m in selectors.shared_path(resolved)] == [b.prompt.id, b.first.id]


def test_a_viewer_and_an_outsider_may_not_create_or_revoke(team: Team) -> None:
    b = branched_thread(team.alpha)
    share, _ = ledger.create_share(thread=b.thread, user=team.editor)

    for user in (team.viewer, team.outsider, team.stranger):
        with pytest.raises(PermissionDenied):
            ledger.create_share(thread=b.thread, user=user)
        with pytest.raises(PermissionDenied):
            ledger.revoke_share(share=share, user=user)

    assert ShareLink.objects.count() == 1
    assert ShareLink.objects.get().revoked_at is None


def test_a_leaf_of_another_thread_or_no_message_is_refused(team: Team) -> None:
    b = branched_thread(team.alpha)
    other = branched_thread(team.alpha, "Other")

    for leaf_id in (other.first.id, "not-an-id", "01JB8ZT6QK5X4V3N2M1P0R9S8T"):
        with pytest.raises(InvalidInput) as refused:
            ledger.create_share(thread=b.thread, user=team.editor, leaf_id=leaf_id)
        assert refused.value.details == {"field": "leafMessageId"}
    with pytest.raises(InvalidInput):
        ledger.create_share(thread=make_thread(project=team.alpha), user=team.editor)

    assert ShareLink.objects.count() == 0


def test_an_expiry_in_the_past_or_without_a_timezone_is_refused(team: Team) -> None:
    b = branched_thread(team.alpha)
    past = timezone.now() - timedelta(seconds=1)

    with pytest.raises(InvalidInput):
        ledger.create_share(thread=b.thread, user=team.editor, expires_at=past)
    with pytest.raises(InvalidInput):
        naive = (timezone.now() + timedelta(days=1)).replace(tzinfo=None)
        ledger.create_share(thread=b.thread, user=team.editor, expires_at=naive)

    assert ShareLink.objects.count() == 0


def test_a_hidden_thread_cannot_be_shared(team: Team) -> None:
    b = branched_thread(team.alpha)
    moderation.hide_thread(user=team.moderator, thread=b.thread)

    with pytest.raises(Conflict):
        ledger.create_share(thread=b.thread, user=team.moderator)


def test_creation_and_revocation_are_audited_once_and_revoking_twice_writes_nothing(
    team: Team,
) -> None:
    b = branched_thread(team.alpha)
    share, secret = ledger.create_share(thread=b.thread, user=team.editor, leaf_id=b.first.id)

    assert ledger.revoke_share(share=share, user=team.moderator) is True
    assert ledger.revoke_share(share=share, user=team.editor) is False

    records = AuditRecord.objects.filter(target_type="sharelink", target_id=share.id)
    created, revoked = records.order_by("created_at", "pk")
    assert (created.action, created.actor, created.project_id) == (
        "create_share",
        team.editor,
        team.alpha.pk,
    )
    assert created.thread_id == b.thread.id
    assert created.details["leafMessageId"] == b.first.id
    assert (revoked.action, revoked.actor) == ("revoke_share", team.moderator)
    assert secret not in str(list(records.values()))
    stored = ShareLink.objects.get(pk=share.pk)
    assert stored.revoked_by == team.moderator
    assert selectors.resolve_share(secret) is None


def test_an_expired_link_resolves_to_nothing_and_the_sweep_audits_its_expiry_once(
    team: Team,
) -> None:
    b = branched_thread(team.alpha)
    soon = timezone.now() + timedelta(minutes=5)
    share, secret = ledger.create_share(thread=b.thread, user=team.editor, expires_at=soon)
    lasting, _ = ledger.create_share(thread=b.thread, user=team.editor)
    assert selectors.resolve_share(secret) is not None
    assert ledger.audit_expired_shares() == []

    later = soon + timedelta(seconds=1)
    assert selectors.resolve_share(secret, now=later) is None
    assert ledger.audit_expired_shares(now=later) == [share.id]
    assert ledger.audit_expired_shares(now=later) == []

    [record] = AuditRecord.objects.filter(action="expire_share")
    assert (record.target_id, record.actor, record.project_id) == (share.id, None, team.alpha.pk)
    assert record.thread_id == b.thread.id
    assert ShareLink.objects.get(pk=lasting.pk).expiry_audited_at is None


def test_the_workers_sweep_audits_expiries(team: Team) -> None:
    b = branched_thread(team.alpha)
    share, _ = ledger.create_share(
        thread=b.thread, user=team.editor, expires_at=timezone.now() + timedelta(minutes=1)
    )
    ShareLink.objects.filter(pk=share.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert sweep().expired_shares == [share.id]
    assert sweep().expired_shares == []
    assert AuditRecord.objects.filter(action="expire_share", target_id=share.id).count() == 1


def test_a_link_revoked_before_it_expired_has_no_expiry_to_audit(team: Team) -> None:
    b = branched_thread(team.alpha)
    soon = timezone.now() + timedelta(minutes=5)
    share, _ = ledger.create_share(thread=b.thread, user=team.editor, expires_at=soon)
    ledger.revoke_share(share=share, user=team.editor)

    assert ledger.audit_expired_shares(now=soon + timedelta(minutes=1)) == []


def test_a_hidden_thread_hides_its_links_until_it_is_visible_again(team: Team) -> None:
    b = branched_thread(team.alpha)
    _, secret = ledger.create_share(thread=b.thread, user=team.editor)

    moderation.hide_thread(user=team.moderator, thread=b.thread)
    assert selectors.resolve_share(secret) is None
    moderation.lock_thread(user=team.moderator, thread=b.thread)
    assert selectors.resolve_share(secret) is None

    moderation.unhide_thread(user=team.moderator, thread=b.thread)
    assert selectors.resolve_share(secret) is not None


def test_deleting_a_thread_deletes_its_links(team: Team) -> None:
    b = branched_thread(team.alpha)
    _, secret = ledger.create_share(thread=b.thread, user=team.editor)

    delete_threads([b.thread.id])

    assert ShareLink.objects.count() == 0
    assert selectors.resolve_share(secret) is None


@pytest.mark.parametrize(
    "secret", ["", "x", "a" * 43, "a" * 44, "../../etc/passwd", "é" * 43, "a\x00" * 20]
)
def test_anything_but_a_live_secret_resolves_to_nothing(team: Team, secret: str) -> None:
    b = branched_thread(team.alpha)
    ledger.create_share(thread=b.thread, user=team.editor)

    assert selectors.resolve_share(secret) is None


def test_a_token_creates_without_a_user_and_is_named_in_the_audit_log(team: Team) -> None:
    b = branched_thread(team.alpha)

    share, _ = ledger.create_share(thread=b.thread, user=None, via="api", token="ci-bot", tokenId=7)

    assert share.created_by is None
    record = AuditRecord.objects.get(action="create_share")
    assert record.actor is None
    assert record.details["via"] == "api" and record.details["token"] == "ci-bot"


def test_a_superuser_without_membership_may_share(team: Team) -> None:
    b = branched_thread(team.alpha)
    assert isinstance(team.superuser, User)

    share, _ = ledger.create_share(thread=b.thread, user=team.superuser)

    assert share.created_by == team.superuser
