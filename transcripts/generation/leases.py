"""The leases under which a worker process generates a run: how long one lasts without renewal,
and the identity the process holds them (and its liveness row) under."""

from __future__ import annotations

import os
import socket

from django.conf import settings


def lease_seconds() -> float:
    """How long a worker's lease (on a run, and on its own liveness) lasts without renewal."""
    return float(getattr(settings, "TRANSCRIPTS_LEASE_SECONDS", 30))


def worker_name() -> str:
    """This process's worker identity, as its leases carry it."""
    return f"{socket.gethostname()}:{os.getpid()}"
