"""URLs of the Transcripts app."""

from __future__ import annotations

from django.urls import include, path

from transcripts import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", views.thread_list, name="thread_list"),
    path("t/<str:thread_id>/", views.conversation, name="conversation"),
    path("t/<str:thread_id>/tree/", views.tree, name="tree"),
    path("runs/<str:run_id>/", views.run_detail, name="run_detail"),
]
