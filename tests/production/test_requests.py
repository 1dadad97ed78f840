"""Production responses from a real uvicorn: the policy, cookie flags, redirects, HSTS, proxies."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.base import PASSWORD, make_user
from tests.production.conftest import production_env, serving
from tests.production.test_settings import directives

pytestmark = pytest.mark.django_db(transaction=True)

LOGIN = "/accounts/login/"


def cookies_of(response: httpx.Response) -> SimpleCookie:
    """Every cookie the response sets, with its attributes."""
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        jar.load(header)
    return jar


def log_in(url: str, *, headers: dict[str, str] | None = None) -> httpx.Response:
    """Fetch the login form, then post it as a user would; the answer to the post."""
    extra = headers or {}
    form = httpx.get(url + LOGIN, headers=extra)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token, form.text
    csrf_cookie = cookies_of(form)["csrftoken"].value
    return httpx.post(
        url + LOGIN,
        data={"username": "reader", "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        # Set by hand: a client keeps a Secure cookie away from an http:// URL.
        headers={**extra, "Cookie": f"csrftoken={csrf_cookie}", "Origin": extra.get("Origin", url)},
    )


def test_a_plain_http_deployment_sends_the_policy_and_httponly_cookies() -> None:
    make_user("reader")
    with serving(production_env(TRANSCRIPTS_HTTPS="0")) as url:
        page = httpx.get(url + LOGIN)
        logged_in = log_in(url)
        docs = httpx.get(url + "/api/v1/docs")
        api = httpx.get(url + "/api/v1/threads")
    assert page.status_code == 200
    policy = directives(page.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"]
    assert "'unsafe-inline'" not in page.headers["content-security-policy"]
    assert "'unsafe-eval'" not in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "same-origin"
    assert page.headers["cross-origin-opener-policy"] == "same-origin"
    assert "strict-transport-security" not in page.headers
    csrf = cookies_of(page)["csrftoken"]
    assert csrf["httponly"] is True and not csrf["secure"]
    assert logged_in.status_code == 302, logged_in.text
    session = cookies_of(logged_in)["sessionid"]
    assert session["httponly"] is True and not session["secure"]
    # The Swagger page and the JSON API carry the same policy.
    assert docs.status_code == 200
    assert docs.headers["content-security-policy"] == page.headers["content-security-policy"]
    assert api.headers["content-security-policy"] == page.headers["content-security-policy"]


def test_an_https_deployment_redirects_plain_http_and_sends_hsts_and_secure_cookies() -> None:
    with serving(production_env()) as url:
        plain = httpx.get(url + "/t/some-thread/?leaf=x")
        probe = httpx.get(url + "/healthz")
        # uvicorn believes X-Forwarded-Proto from a proxy on the same machine by default.
        secure = httpx.get(url + LOGIN, headers={"X-Forwarded-Proto": "https"})
    assert plain.status_code == 301
    assert (
        plain.headers["location"] == url.replace("http://", "https://") + "/t/some-thread/?leaf=x"
    )
    assert probe.status_code == 200
    assert secure.status_code == 200
    assert secure.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
    assert "content-security-policy" in secure.headers
    csrf = cookies_of(secure)["csrftoken"]
    assert csrf["secure"] is True and csrf["httponly"] is True


def test_a_proxy_on_another_machine_is_believed_only_through_the_named_header() -> None:
    make_user("reader")
    forwarded = {"X-Forwarded-Proto": "https"}
    # --no-proxy-headers: uvicorn ignores the header, as it does for a proxy it does not trust.
    with serving(production_env(), "--no-proxy-headers") as url:
        unnamed = httpx.get(url + LOGIN, headers=forwarded)
    named_env = production_env(TRANSCRIPTS_PROXY_SSL_HEADER="X-Forwarded-Proto")
    with serving(named_env, "--no-proxy-headers") as url:
        named = httpx.get(url + LOGIN, headers=forwarded)
        direct = httpx.get(url + LOGIN)
        logged_in = log_in(url, headers={**forwarded, "Origin": url.replace("http:", "https:")})
    assert unnamed.status_code == 301
    assert named.status_code == 200
    assert named.headers["strict-transport-security"].startswith("max-age=31536000")
    assert direct.status_code == 301
    assert logged_in.status_code == 302, logged_in.text
    session = cookies_of(logged_in)["sessionid"]
    assert session["secure"] is True and session["httponly"] is True


def test_the_wsgi_handler_sends_the_policy_too(client: Client, settings: Any) -> None:
    settings.TRANSCRIPTS_CSP = "default-src 'self'"
    response = client.get(LOGIN)
    assert response.headers["Content-Security-Policy"] == "default-src 'self'"


def test_debug_mode_sends_no_policy(client: Client) -> None:
    assert "Content-Security-Policy" not in client.get(LOGIN).headers
