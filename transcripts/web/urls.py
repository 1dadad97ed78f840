"""URLs of the Transcripts app."""

from __future__ import annotations

from django.urls import include, path

from transcripts.web.views import browse, compare, generation, imports, moderation

urlpatterns = [
    path("healthz", browse.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", browse.thread_list, name="thread_list"),
    path("t/<str:thread_id>/", browse.conversation, name="conversation"),
    path("t/<str:thread_id>/tree/", browse.tree, name="tree"),
    path("runs/<str:run_id>/", browse.run_detail, name="run_detail"),
    path("import/", imports.import_page, name="import_page"),
    path("import/<str:job_id>/", imports.import_progress, name="import_progress"),
    # Generation (issue 5): regenerate, edit, reply, stop, retry, restore and the live run.
    path(
        "t/<str:thread_id>/m/<str:message_id>/regenerate/",
        generation.regenerate,
        name="regenerate",
    ),
    path("t/<str:thread_id>/m/<str:message_id>/edit/", generation.edit, name="edit_message"),
    path("t/<str:thread_id>/reply/", generation.reply, name="reply"),
    path(
        "t/<str:thread_id>/restore/<str:run_id>/",
        generation.restore,
        name="restore_branch",
    ),
    path("runs/<str:run_id>/live/", generation.run_live, name="run_live"),
    path("runs/<str:run_id>/cancel/", generation.cancel, name="run_cancel"),
    path("runs/<str:run_id>/retry/", generation.retry, name="run_retry"),
    path(
        "t/<str:thread_id>/fork/<str:message_id>/compare/",
        compare.compare_fork,
        name="compare",
    ),
    path("compare/", compare.compare_runs, name="compare_runs"),
    path("runs/<str:run_id>/restore/", compare.restore, name="run_restore"),
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
]
