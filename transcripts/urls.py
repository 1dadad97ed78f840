"""URLs of the Transcripts app."""

from __future__ import annotations

from django.urls import include, path

from transcripts import views, views_compare, views_generation, views_moderation, views_transfer

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", views.thread_list, name="thread_list"),
    path("t/<str:thread_id>/", views.conversation, name="conversation"),
    path("t/<str:thread_id>/tree/", views.tree, name="tree"),
    path("runs/<str:run_id>/", views.run_detail, name="run_detail"),
    path("import/", views_transfer.import_page, name="import_page"),
    path("import/<str:job_id>/", views_transfer.import_progress, name="import_progress"),
    # Generation (issue 5): regenerate, edit, reply, stop, retry, restore and the live run.
    path(
        "t/<str:thread_id>/m/<str:message_id>/regenerate/",
        views_generation.regenerate,
        name="regenerate",
    ),
    path("t/<str:thread_id>/m/<str:message_id>/edit/", views_generation.edit, name="edit_message"),
    path("t/<str:thread_id>/reply/", views_generation.reply, name="reply"),
    path(
        "t/<str:thread_id>/restore/<str:run_id>/",
        views_generation.restore,
        name="restore_branch",
    ),
    path("runs/<str:run_id>/live/", views_generation.run_live, name="run_live"),
    path("runs/<str:run_id>/cancel/", views_generation.cancel, name="run_cancel"),
    path("runs/<str:run_id>/retry/", views_generation.retry, name="run_retry"),
    path(
        "t/<str:thread_id>/fork/<str:message_id>/compare/",
        views_compare.compare_fork,
        name="compare",
    ),
    path("compare/", views_compare.compare_runs, name="compare_runs"),
    path("runs/<str:run_id>/restore/", views_compare.restore, name="run_restore"),
    path("runs/<str:run_id>/rate/", views_compare.rate, name="run_rate"),
    path(
        "t/<str:thread_id>/m/<str:message_id>/report/",
        views_moderation.report,
        name="report_message",
    ),
    path("moderation/", views_moderation.queue, name="moderation_queue"),
    path(
        "moderation/reports/<int:report_id>/close/",
        views_moderation.close,
        name="close_report",
    ),
]
