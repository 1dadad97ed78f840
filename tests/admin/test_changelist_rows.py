"""Each row of an admin list: the links and checkbox Django builds, without their per-row cost."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse

from tests.admin.conftest import conversation_in
from tests.base import Team
from transcripts import ledger
from transcripts.admin.changelist_rows import action_checkbox, change_url, url_for
from transcripts.models import AuditRecord, Message, Project, Report, Thread

pytestmark = pytest.mark.django_db
# The lists with actions, hence a checkbox per row (events and audit records have none).
LISTS = ["thread", "run", "message", "report", "sharelink"]


@pytest.mark.parametrize(
    ("viewname", "args"),
    [
        ("conversation", ["01J0000000000000000000000A"]),
        ("compare", ["01J0000000000000000000000A", "root"]),
        ("run_detail", ["01J0000000000000000000000B"]),
        ("admin:transcripts_thread_change", ["01J0000000000000000000000A"]),
        ("admin:transcripts_project_change", [7]),
        ("admin:transcripts_thread_changelist", []),
        # Quoted as reverse() quotes them: spaces, percent signs, non-ASCII, sub-delimiters.
        ("conversation", ["a b%c"]),
        ("conversation", ["é~:@!$&'()*+,;="]),
        ("admin:transcripts_thread_change", [quote("a/b_c")]),
    ],
)
def test_url_for_builds_the_url_reverse_builds(viewname: str, args: list[object]) -> None:
    assert url_for(viewname, *args) == reverse(viewname, args=args)
    assert url_for(viewname, *args) == reverse(viewname, args=args)  # from the kept template


def test_url_for_refuses_what_reverse_refuses() -> None:
    # A slash does not fit a <str:> segment: reverse() decides, and refuses it.
    with pytest.raises(NoReverseMatch):
        url_for("conversation", "a/b")


def test_change_url_is_the_admins_quoted_change_page() -> None:
    assert change_url(Thread, "x/y") == reverse(
        "admin:transcripts_thread_change", args=[quote("x/y")]
    )


def test_the_checkbox_is_djangos_widget_html(team: Team) -> None:
    thread = conversation_in(Project.objects.get(slug="alpha"), title='<b>"quoted"</b> & more')
    model_admin = admin.site._registry[Thread]
    assert action_checkbox(thread) == admin.ModelAdmin.action_checkbox(model_admin, thread)
    message = Message.objects.filter(thread=thread).first()
    assert message is not None
    assert action_checkbox(message) == admin.ModelAdmin.action_checkbox(model_admin, message)


@pytest.mark.parametrize("model", LISTS)
def test_a_list_renders_no_template_per_row(staff: Team, model: str) -> None:
    """The checkbox of each row is written directly, not through the widget templates."""
    for index in range(3):
        thread = conversation_in(staff.alpha, title=f"thread {index}")
        ledger.create_share(thread=thread, user=staff.editor)
        message = Message.objects.filter(thread=thread).first()
        Report.objects.create(message=message, thread=thread, reporter=staff.viewer, reason="spam")
        AuditRecord.objects.create(
            action="test", target_type="thread", target_id=thread.id, project=staff.alpha
        )
    response = staff.client(staff.superuser).get(reverse(f"admin:transcripts_{model}_changelist"))
    assert response.status_code == 200
    assert response.content.decode().count('name="_selected_action"') >= 3
    rendered = [template.name for template in response.templates]
    # Django renders this template once per row; the action bar's select stays (once a page).
    assert "django/forms/widgets/checkbox.html" not in rendered


def test_each_row_links_to_its_change_page_with_the_filters_kept(staff: Team) -> None:
    alpha = Project.objects.get(slug="alpha")
    thread = conversation_in(alpha, title="linked")
    client: Client = staff.client(staff.superuser)
    url = reverse("admin:transcripts_thread_changelist")
    page = client.get(url, {"hidden__exact": "0"}).content.decode()
    change = reverse("admin:transcripts_thread_change", args=[quote(thread.pk)])
    assert f'href="{change}?_changelist_filters=hidden__exact%3D0"' in page


def test_the_share_link_list_uses_the_same_number_of_queries_for_2_and_12_rows(
    staff: Team,
) -> None:
    client = staff.client(staff.moderator)
    url = reverse("admin:transcripts_sharelink_changelist")

    def add_links(count: int) -> int:
        for project, user in ((staff.alpha, staff.editor), (staff.beta, staff.outsider)):
            for index in range(count):
                thread = conversation_in(project, title=f"shared {index}")
                ledger.create_share(thread=thread, user=user)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200
        return len(captured)

    assert add_links(2) == add_links(10)


@pytest.mark.parametrize(
    ("model", "unread"),
    [
        ("run", ['"transcripts_run"."usage"', '"transcripts_thread"."metadata"']),
        ("message", ['"transcripts_message"."metadata"', '"transcripts_thread"."agents"']),
        ("report", ['"transcripts_thread"."metadata"', '"transcripts_project"."settings"']),
        ("thread", ['"transcripts_thread"."metadata"', '"transcripts_thread"."agents"']),
    ],
)
def test_a_list_reads_no_document_its_columns_do_not_show(
    staff: Team, model: str, unread: list[str]
) -> None:
    thread = conversation_in(staff.alpha, title="listed")
    message = Message.objects.filter(thread=thread).first()
    Report.objects.create(message=message, thread=thread, reporter=staff.viewer, reason="spam")
    client = staff.client(staff.superuser)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(f"admin:transcripts_{model}_changelist"))
    assert response.status_code == 200 and "listed" in response.content.decode()
    # The page's rows (other queries, e.g. the project filter's choices, read projects).
    rows = f'SELECT "transcripts_{model}"."id", '
    read = " ".join(q["sql"] for q in captured if q["sql"].startswith(rows))
    assert read
    assert [column for column in unread if column in read] == []
    # The record's page still shows them.
    record = {"run": thread.runs.first(), "message": message, "thread": thread}.get(model)
    if record is not None:
        page = client.get(reverse(f"admin:transcripts_{model}_change", args=[record.pk]))
        assert page.status_code == 200
