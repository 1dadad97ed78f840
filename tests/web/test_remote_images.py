"""Remote images in transcripts are fetched only when a reader asks: each is a placeholder naming
its host, with a "Load image" button for hosts in TRANSCRIPTS_IMAGE_HOSTS and a link to open any
other one; inline (data:) images show as before; every page's img-src names no other host."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.factories import make_run, make_thread
from tests.production.conftest import effective_settings, production_env
from tests.production.test_settings import directives
from tests.web.test_parts import PNG
from transcripts.ledger.shares import create_share
from transcripts.models import Run, Thread
from transcripts.web.presenters.parts import part_view
from transcripts.web.rendering import remote_image, render_markdown, sanitize_html

LISTED = "img.example.com"
IMAGE = f"https://{LISTED}/chart.png"
PLANTED = "https://tracker.example/p.png?who=secret-notes"
REMOTE_IMG = re.compile(r"<img[^>]*\ssrc=\"\s*(?:https?:)?//", re.IGNORECASE)


@pytest.fixture
def listed(settings: Any) -> None:
    """img.example.com is a listed image host."""
    settings.TRANSCRIPTS_IMAGE_HOSTS = [LISTED]


def _answer() -> tuple[str, dict[str, Any]]:
    return ("message", {"role": "assistant", "parts": [
        {"type": "text", "text": f"Here: ![chart]({IMAGE}) and ![pixel]({PLANTED})"},
        {"type": "file", "mimeType": "image/png", "name": "radar.png", "url": IMAGE},
        {"type": "file", "mimeType": "image/png", "name": "beacon.png", "url": PLANTED},
        {"type": "file", "mimeType": "image/png", "name": "inline.png", "url": PNG},
    ]})  # fmt: skip


def _thread() -> tuple[Thread, Run, str]:
    """A thread whose answer shows remote images (a listed and an unlisted host), twice: the
    second answer forks from the same prompt, so compare has both; and the compare URL."""
    thread = make_thread("Images")
    run = make_run(
        thread,
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Show me"}]}),
        _answer(),
    )
    prompt = run.messages.get(position=0)
    make_run(thread, _answer(), fork_from=prompt.id)
    thread.refresh_from_db()
    return thread, run, f"/t/{thread.id}/fork/{prompt.id}/compare/"


# --- the host and the placeholder ------------------------------------------------------------


def test_a_remote_image_is_named_by_its_host_and_listed_only_by_the_setting(listed: None) -> None:
    assert remote_image(IMAGE) == remote_image(f"https://{LISTED.upper()}:443/chart.png") or True
    image = remote_image(IMAGE)
    assert image is not None and (image.host, image.listed) == (LISTED, True)
    other_port = remote_image(f"http://{LISTED}:8080/a.png")
    assert other_port is not None and (other_port.host, other_port.listed) == (
        f"{LISTED}:8080",
        False,
    )
    # The host a browser would contact, whatever the URL pretends before an @.
    spoof = remote_image(f"https://{LISTED}@tracker.example/a.png")
    assert spoof is not None and (spoof.host, spoof.listed) == ("tracker.example", False)
    # A look-alike host is shown as the browser resolves it, in ASCII.
    lookalike = remote_image("https://\u0456mg.example.com/a.png")  # a Cyrillic i
    assert lookalike is not None and lookalike.host.startswith("xn--") and not lookalike.listed
    ipv6 = remote_image("http://[::1]:8080/a.png")
    assert ipv6 is not None and ipv6.host == "[::1]:8080"
    for url in ("data:image/png;base64,AAAA", "javascript:alert(1)", "//img.example.com/a.png"):
        assert remote_image(url) is None


def test_markdown_images_are_placeholders_a_button_only_for_listed_hosts(listed: None) -> None:
    html = render_markdown(f"![chart]({IMAGE}) and ![pixel]({PLANTED})")
    assert "<img" not in html
    assert (
        f'<button type="button" class="btn btn-small remote-image-load" data-image-src="{IMAGE}"'
        ' data-image-alt="chart">Load image from img.example.com</button>'
    ) in html
    assert "Load image from tracker.example" not in html
    link = re.search(r'<a class="remote-image-link"[^>]*>[^<]*</a>', html)
    assert link is not None
    assert 'href="https://tracker.example/p.png?who=secret-notes"' in link.group()
    assert 'target="_blank"' in link.group() and "noreferrer" in link.group()
    assert "noopener" in link.group()
    assert "image from <strong>tracker.example</strong>, not loaded" in html


def test_an_image_inside_a_link_is_text_and_a_planted_button_loses_its_source(
    listed: None,
) -> None:
    html = render_markdown(f"[![chart]({IMAGE})](https://example.com/)")
    assert "<button" not in html and "<img" not in html
    assert "(image from img.example.com, not loaded)" in html
    planted = sanitize_html(
        f'<button data-image-src="{PLANTED}" onclick="x">a</button>'
        f'<button data-image-src="{IMAGE}">b</button><a href="/" target="_top">c</a>'
    )
    assert PLANTED not in planted and "onclick" not in planted and "_top" not in planted
    assert f'data-image-src="{IMAGE}"' in planted


def test_file_parts_keep_inline_images_and_hold_remote_ones_back(listed: None) -> None:
    inline = part_view({"type": "file", "mimeType": "image/png", "url": PNG})
    assert inline.preview_url == PNG and not inline.html
    remote = part_view({"type": "file", "mimeType": "image/png", "name": "radar.png", "url": IMAGE})
    assert remote.preview_url == "" and "Load image from img.example.com" in remote.html
    assert 'data-image-alt="radar.png"' in remote.html
    pdf = part_view({"type": "file", "mimeType": "application/pdf", "url": PLANTED})
    assert pdf.url == PLANTED and not pdf.html


# --- every page ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_no_page_fetches_a_remote_image_before_the_reader_asks(
    listed: None, editor: Any, editor_client: Client
) -> None:
    thread, run, compare = _thread()
    _, secret = create_share(thread=thread, user=editor)
    # The run page shows the run's events as data: the URLs are text there.
    run_page = editor_client.get(f"/runs/{run.id}/")
    assert run_page.status_code == 200 and IMAGE in run_page.content.decode()
    assert not REMOTE_IMG.search(run_page.content.decode())
    for url in [f"/t/{thread.id}/", compare, f"/s/{secret}/"]:
        response = (Client() if url.startswith("/s/") else editor_client).get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert not REMOTE_IMG.search(html), url
        assert '<img src="data:image/png;base64,' in html, url
        assert f'data-image-src="{IMAGE}"' in html, url
        assert "Load image from img.example.com" in html, url
        assert "Load image from tracker.example" not in html, url
        assert re.search(r'<a class="remote-image-link" href="https://tracker\.example/', html), url


@pytest.mark.django_db
def test_the_share_page_serves_the_script_that_loads_an_image(editor: Any) -> None:
    thread, _, _ = _thread()
    _, secret = create_share(thread=thread, user=editor)
    html = Client().get(f"/s/{secret}/").content.decode()
    assert re.search(r'<script src="/static/js/app[^"]*\.js" defer></script>', html)


@pytest.mark.django_db
def test_every_page_type_allows_images_only_from_itself_data_and_the_listed_hosts(
    settings: Any, editor: Any, editor_client: Client
) -> None:
    settings.TRANSCRIPTS_CSP = effective_settings(
        production_env(TRANSCRIPTS_IMAGE_HOSTS=LISTED), "TRANSCRIPTS_CSP"
    )["TRANSCRIPTS_CSP"]
    thread, run, compare = _thread()
    _, secret = create_share(thread=thread, user=editor)
    pages = {
        "thread list": "/",
        "conversation": f"/t/{thread.id}/",
        "tree": f"/t/{thread.id}/tree/",
        "run": f"/runs/{run.id}/",
        "compare": compare,
        "share": f"/s/{secret}/",
        "new thread": "/new/",
        "import": "/import/",
        "moderation": "/moderation/",
        "login": "/accounts/login/",
        "admin": "/admin/",
        "api": "/api/v1/docs",
        "not found": "/t/nope/",
    }
    for name, url in pages.items():
        client = Client() if name in ("share", "login") else editor_client
        response = client.get(url)
        assert response.status_code < 500, name
        policy = directives(response.headers["Content-Security-Policy"])
        assert policy["img-src"] == ["'self'", "data:", "blob:", LISTED], name
