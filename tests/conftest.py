"""Fixtures every test package shares."""

from __future__ import annotations

import pytest

from tests.base import Team, make_team


@pytest.fixture
def team(db: None) -> Team:
    """Projects alpha and beta with an owner, a moderator, an editor, a viewer, an outsider
    (admin of beta), a stranger (no project) and a superuser."""
    return make_team()
