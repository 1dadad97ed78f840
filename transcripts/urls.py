"""URLs of the Transcripts app."""

from __future__ import annotations

from django.urls import path

from transcripts import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
]
