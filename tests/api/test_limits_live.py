"""The quotas are shared: two uvicorn processes on one database count one project's requests
together, and the request past the project's limit is refused by whichever process gets it."""

from __future__ import annotations

import os
from itertools import cycle

import httpx
import pytest

from tests.api.test_limits import within_one_minute
from tests.base import Team
from tests.live_server import serving
from tests.support import database_url_of_tests
from transcripts.models import Project

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 6


def test_two_processes_share_one_project_limit(team: Team) -> None:
    Project.objects.filter(pk=team.alpha.pk).update(requests_per_minute=LIMIT)
    # Two tokens of one project: the project's count is what both processes share.
    headers = [{"Authorization": f"Bearer {team.token(team.alpha, 'read')}"} for _ in range(2)]
    env = {**os.environ, "DATABASE_URL": database_url_of_tests(), "LOG_LEVEL": "WARNING"}
    with serving(env) as first, serving(env) as second:
        within_one_minute(20)
        servers = cycle([(first.url, headers[0]), (second.url, headers[1])])
        answers = []
        for _ in range(LIMIT):
            url, header = next(servers)
            answers.append(httpx.get(url + "/api/v1/threads", headers=header).status_code)
        assert answers == [200] * LIMIT
        # Each process served only half: neither could have refused on its own count.
        for url, header in (next(servers), next(servers)):
            refused = httpx.get(url + "/api/v1/threads", headers=header)
            assert refused.status_code == 429, refused.text
            assert 1 <= int(refused.headers["Retry-After"]) <= 60
            assert refused.json()["error"]["details"]["scope"] == "project"
