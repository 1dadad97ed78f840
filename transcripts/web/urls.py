"""URLs of the pages."""

from __future__ import annotations

from django.conf import settings
from django.urls import include, path, register_converter
from django.views.generic import RedirectView

from transcripts.web.views import (
    compare,
    conversation,
    dashboard,
    datasets,
    experiment_judge,
    experiments,
    forks,
    generation,
    health,
    imports,
    live_list,
    moderation,
    new_thread,
    organise,
    projects,
    queues,
    runs,
    score_panel,
    scores,
    shares,
    threads,
    tree,
)


class UlidConverter:
    """A ULID path segment (26 letters and digits), so `experiments/compare/` is not an id."""

    regex = "[0-9A-Za-z]{26}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


register_converter(UlidConverter, "ulid")

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", threads.thread_list, name="thread_list"),
    path("new/", new_thread.new_thread, name="new_thread"),
    # Pages that do not link the icon (the admin, the API docs) still get it, not a 404.
    path("favicon.ico", RedirectView.as_view(url=f"{settings.STATIC_URL}img/favicon.svg")),
    path("projects/switch/", projects.switch, name="project_switch"),
    path("p/<slug:slug>/", projects.project_page, name="project"),
    path("p/<slug:slug>/live/", live_list.project_live, name="project_live"),
    path("p/<slug:slug>/audit/", projects.audit_log, name="project_audit"),
    path("p/<slug:slug>/datasets/", datasets.datasets_page, name="project_datasets"),
    path("p/<slug:slug>/dashboard/", dashboard.dashboard_page, name="project_dashboard"),
    path("p/<slug:slug>/scores/", scores.scores_page, name="project_scores"),
    path(
        "p/<slug:slug>/scores/<int:config_id>/archive/",
        scores.archive_config,
        name="project_archive_score",
    ),
    path("p/<slug:slug>/scores/required/", scores.need_config, name="project_scores_required"),
    path("p/<slug:slug>/queues/", queues.queues_page, name="project_queues"),
    path("p/<slug:slug>/queues/<int:queue_id>/", queues.queue_page, name="project_queue"),
    path(
        "p/<slug:slug>/queues/<int:queue_id>/close/",
        queues.close_queue,
        name="project_queue_close",
    ),
    path(
        "p/<slug:slug>/queues/<int:queue_id>/review/",
        queues.review_page,
        name="project_queue_review",
    ),
    path("p/<slug:slug>/experiments/", experiments.experiments_page, name="experiments"),
    path("p/<slug:slug>/experiments/new/", experiments.new_experiment, name="experiment_new"),
    path(
        "p/<slug:slug>/experiments/new/selection/",
        experiments.from_selection,
        name="experiment_selection",
    ),
    path(
        "p/<slug:slug>/experiments/<ulid:experiment_id>/",
        experiments.experiment_page,
        name="experiment",
    ),
    path(
        "p/<slug:slug>/experiments/<ulid:experiment_id>/progress/",
        experiments.experiment_progress,
        name="experiment_progress",
    ),
    path(
        "p/<slug:slug>/experiments/<ulid:experiment_id>/control/",
        experiments.control,
        name="experiment_control",
    ),
    path(
        "p/<slug:slug>/experiments/<ulid:experiment_id>/adopt/",
        experiments.adopt,
        name="experiment_adopt",
    ),
    path(
        "p/<slug:slug>/experiments/<ulid:experiment_id>/discard/",
        experiments.discard,
        name="experiment_discard",
    ),
    path("p/<slug:slug>/members/", projects.add_member, name="project_add_member"),
    path(
        "p/<slug:slug>/members/<int:user_id>/role/",
        projects.change_role,
        name="project_change_role",
    ),
    path(
        "p/<slug:slug>/members/<int:user_id>/remove/",
        projects.remove_member,
        name="project_remove_member",
    ),
    path("p/<slug:slug>/tokens/", projects.create_token, name="project_create_token"),
    path(
        "p/<slug:slug>/tokens/<int:token_id>/revoke/",
        projects.revoke_token,
        name="project_revoke_token",
    ),
    path("p/<slug:slug>/retention/", projects.set_retention, name="project_retention"),
    # Experiments (issue 29): judge mode and two compared, before any experiments/<id>/ route.
    path(
        "p/<slug:slug>/experiments/compare/",
        experiment_judge.compare_page,
        name="experiments_compare",
    ),
    path(
        "p/<slug:slug>/experiments/<str:experiment_id>/judge/",
        experiment_judge.judge_page,
        name="experiment_judge",
    ),
    path("t/<str:thread_id>/", conversation.conversation, name="conversation"),
    path("t/<str:thread_id>/tree/", tree.tree, name="tree"),
    path("t/<str:thread_id>/rename/", organise.rename, name="thread_rename"),
    path("t/<str:thread_id>/archive/", organise.archive, name="thread_archive"),
    path("t/<str:thread_id>/pin/", organise.pin, name="thread_pin"),
    path("t/<str:thread_id>/tags/", organise.tags, name="thread_tags"),
    path("t/<str:thread_id>/delete/", organise.delete, name="thread_delete"),
    path("threads/bulk/", organise.bulk, name="threads_bulk"),
    path("t/<str:thread_id>/shares/", shares.thread_shares, name="thread_shares"),
    path("t/<str:thread_id>/shares/<str:share_id>/revoke/", shares.revoke, name="share_revoke"),
    path("s/<str:secret>/", shares.shared, name="shared"),
    path("runs/<str:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<str:run_id>/live/", runs.run_live, name="run_live"),
    path("import/", imports.import_page, name="import_page"),
    path("import/<str:job_id>/", imports.import_progress, name="import_progress"),
    path(
        "t/<str:thread_id>/m/<str:message_id>/regenerate/",
        generation.regenerate,
        name="regenerate",
    ),
    path("t/<str:thread_id>/m/<str:message_id>/edit/", generation.edit, name="edit_message"),
    path(
        "t/<str:thread_id>/m/<str:message_id>/continue/",
        generation.continue_answer,
        name="continue_answer",
    ),
    path("t/<str:thread_id>/m/<str:message_id>/answer/", generation.answer, name="answer_message"),
    path("t/<str:thread_id>/m/<str:message_id>/fork/", forks.fork, name="fork_message"),
    path(
        "t/<str:thread_id>/m/<str:message_id>/feedback/",
        scores.feedback,
        name="message_feedback",
    ),
    path(
        "t/<str:thread_id>/m/<str:message_id>/score/",
        score_panel.score_message,
        name="message_score",
    ),
    path("t/<str:thread_id>/score/", score_panel.score_thread, name="thread_score"),
    path("t/<str:thread_id>/reply/", generation.reply, name="reply"),
    path("runs/<str:run_id>/cancel/", generation.cancel, name="run_cancel"),
    path("runs/<str:run_id>/retry/", generation.retry, name="run_retry"),
    path("runs/<str:run_id>/restore/", generation.restore, name="run_restore"),
    path(
        "t/<str:thread_id>/fork/<str:message_id>/compare/",
        compare.compare_fork,
        name="compare",
    ),
    path("compare/", compare.compare_runs, name="compare_runs"),
    path("runs/<str:run_id>/rate/", compare.rate, name="run_rate"),
    path(
        "t/<str:thread_id>/m/<str:message_id>/report/",
        moderation.report,
        name="report_message",
    ),
    path("moderation/", moderation.queue, name="moderation_queue"),
    path(
        "moderation/reports/<int:report_id>/close/",
        moderation.close,
        name="close_report",
    ),
    path("moderation/reports/<int:report_id>/act/", moderation.act, name="act_on_report"),
    path(
        "moderation/reports/<int:report_id>/redact/",
        moderation.redact,
        name="redact_from_report",
    ),
]
