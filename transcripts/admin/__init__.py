"""The Django admin: view-only pages for every model, writes through audited actions.

`site.py` is the admin site; one module per model admin; `actions.py` holds what they share;
`scope.py` decides, by project, which records and actions each user meets.
Importing this package registers the model admins on `admin.site` (see TranscriptsAdminConfig
for why it is imported before autodiscover).
"""

from __future__ import annotations

from transcripts.admin import (
    audit,
    events,
    memberships,
    messages,
    projects,
    reports,
    runs,
    shares,
    threads,
    tokens,
)

__all__ = [
    "audit",
    "events",
    "memberships",
    "messages",
    "projects",
    "reports",
    "runs",
    "shares",
    "threads",
    "tokens",
]
