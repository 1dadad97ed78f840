"""TRANSCRIPTS_IMAGE_HOSTS: the only remote hosts the production policy lets images come from."""

from __future__ import annotations

import subprocess

import pytest

from tests.production.conftest import effective_settings, production_env
from tests.production.test_settings import directives


def _img_src(hosts: str) -> list[str]:
    env = production_env(TRANSCRIPTS_IMAGE_HOSTS=hosts)
    found = effective_settings(env, "TRANSCRIPTS_CSP", "TRANSCRIPTS_IMAGE_HOSTS")
    img_src: list[str] = directives(found["TRANSCRIPTS_CSP"])["img-src"]
    assert img_src[3:] == found["TRANSCRIPTS_IMAGE_HOSTS"]
    return img_src


def test_by_default_images_come_only_from_the_site_and_the_transcript_itself() -> None:
    assert _img_src("") == ["'self'", "data:", "blob:"]


def test_listed_hosts_are_added_and_nothing_else() -> None:
    assert _img_src(" Images.Example.com, 127.0.0.1:8123 ,") == [
        "'self'", "data:", "blob:", "images.example.com", "127.0.0.1:8123",
    ]  # fmt: skip


@pytest.mark.parametrize("hosts", ["https:", "*", "evil.example; script-src *", "a b"])
def test_a_host_list_that_is_not_hosts_stops_the_process(hosts: str) -> None:
    with pytest.raises(subprocess.CalledProcessError) as refused:
        effective_settings(production_env(TRANSCRIPTS_IMAGE_HOSTS=hosts), "TRANSCRIPTS_CSP")
    assert "TRANSCRIPTS_IMAGE_HOSTS" in refused.value.stderr
