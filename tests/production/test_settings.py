"""The production switches, as a fresh process loads them, and `manage.py check --deploy`."""

from __future__ import annotations

import re

from tests.production.conftest import effective_settings, manage, production_env

HTTPS_SETTINGS = (
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
)
OTHER_SETTINGS = (
    "DEBUG",
    "TRANSCRIPTS_CSP",
    "SESSION_COOKIE_HTTPONLY",
    "CSRF_COOKIE_HTTPONLY",
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "SECURE_REFERRER_POLICY",
    "SECURE_CROSS_ORIGIN_OPENER_POLICY",
    "X_FRAME_OPTIONS",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_REDIRECT_EXEMPT",
    "MIDDLEWARE",
)


def directives(policy: str) -> dict[str, list[str]]:
    """A Content-Security-Policy as {directive: sources}."""
    parsed = {}
    for directive in policy.split(";"):
        name, *sources = directive.split()
        parsed[name] = sources
    return parsed


def test_production_mode_is_https_by_default() -> None:
    found = effective_settings(production_env(), *HTTPS_SETTINGS, *OTHER_SETTINGS)
    assert found["DEBUG"] is False
    assert found["SECURE_SSL_REDIRECT"] is True
    assert found["SECURE_HSTS_SECONDS"] == 31536000
    assert found["SESSION_COOKIE_SECURE"] is True
    assert found["CSRF_COOKIE_SECURE"] is True
    assert found["SESSION_COOKIE_HTTPONLY"] is True
    assert found["CSRF_COOKIE_HTTPONLY"] is True
    # No proxy is trusted until the operator names the header it sets.
    assert found["SECURE_PROXY_SSL_HEADER"] is None
    assert "config.csp.content_security_policy" in found["MIDDLEWARE"]


def test_production_policy_allows_scripts_and_styles_only_from_the_site() -> None:
    policy = directives(effective_settings(production_env(), "TRANSCRIPTS_CSP")["TRANSCRIPTS_CSP"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]


def test_plain_http_turns_off_only_the_https_settings() -> None:
    secure = effective_settings(production_env(), *HTTPS_SETTINGS, *OTHER_SETTINGS)
    plain = effective_settings(
        production_env(TRANSCRIPTS_HTTPS="0"), *HTTPS_SETTINGS, *OTHER_SETTINGS
    )
    assert {name: plain[name] for name in HTTPS_SETTINGS} == {
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
    }
    assert {name: plain[name] for name in OTHER_SETTINGS} == {
        name: secure[name] for name in OTHER_SETTINGS
    }
    assert plain["TRANSCRIPTS_CSP"]


def test_debug_mode_keeps_its_development_defaults() -> None:
    found = effective_settings(production_env(DJANGO_DEBUG="1"), *HTTPS_SETTINGS, "TRANSCRIPTS_CSP")
    assert found == {
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "TRANSCRIPTS_CSP": "",
    }


def test_the_hsts_and_proxy_switches_reach_the_settings() -> None:
    env = production_env(
        TRANSCRIPTS_HSTS_SECONDS="3600",
        TRANSCRIPTS_HSTS_INCLUDE_SUBDOMAINS="0",
        TRANSCRIPTS_HSTS_PRELOAD="1",
        TRANSCRIPTS_PROXY_SSL_HEADER="X-Forwarded-Proto",
    )
    found = effective_settings(
        env,
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER",
    )
    assert found == {
        "SECURE_HSTS_SECONDS": 3600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_check_deploy_is_clean_in_production_mode() -> None:
    result = manage(production_env(), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_check_deploy_with_preload_asked_for_is_clean_too() -> None:
    env = production_env(TRANSCRIPTS_HSTS_PRELOAD="1")
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout, result.stdout


def test_check_deploy_on_plain_http_names_exactly_what_the_switch_turned_off() -> None:
    result = manage(
        production_env(TRANSCRIPTS_HTTPS="0"), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert result.returncode == 1
    found = set(re.findall(r"\((security\.W\d+)\)", result.stderr))
    assert found == {"security.W004", "security.W008", "security.W012", "security.W016"}
