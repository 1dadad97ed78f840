"""tools/install_deps.py hands uv the sources pip would install from, or leaves it to pip."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture
def deps() -> Any:
    """tools/install_deps.py (the tools folder is not a package)."""
    sys.path.insert(0, str(TOOLS))
    try:
        return importlib.import_module("install_deps")
    finally:
        sys.path.remove(str(TOOLS))


def test_pip_settings_merge_files_then_environment(
    deps: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    xdg = tmp_path / "xdg" / "pip"
    xdg.mkdir(parents=True)
    (xdg / "pip.conf").write_text(
        "[global]\nindex-url = https://global.example/simple\ntimeout = 30\n"
    )
    named = tmp_path / "named.conf"
    named.write_text(
        "[global]\nextra-index-url =\n    file:///one/simple\n    file:///two/simple\n"
        "[install]\nfind-links = /wheels\n"
    )
    environ = {
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PIP_CONFIG_FILE": str(named),
        "PIP_DEFAULT_TIMEOUT": "180",
        "PIP_INDEX_URL": "https://env.example/simple",
    }
    settings = deps.pip_settings(environ)
    assert settings["index-url"] == "https://env.example/simple"  # the variable wins
    assert settings["extra-index-url"].split() == ["file:///one/simple", "file:///two/simple"]
    assert settings["find-links"] == "/wheels"
    assert settings["timeout"] == "30"
    assert settings["default-timeout"] == "180"
    assert "config-file" not in settings


def test_the_null_device_means_no_files(deps: Any) -> None:
    assert deps.pip_config_files({"PIP_CONFIG_FILE": os.devnull}) == []


def test_uv_gets_the_same_indexes(deps: Any) -> None:
    flags, env = deps.uv_options(
        {
            "index-url": "https://mirror.example/simple",
            "extra-index-url": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
            "find-links": "/opt/wheels",
            "constraint": "/etc/xdg/pip/constraints.txt",
            "trusted-host": "mirror.example",
            "cert": "/etc/ssl/certs/ca-certificates.crt",
            "default-timeout": "180",
            "disable-pip-version-check": "1",
        }
    )
    assert flags == [
        "--index-url",
        "https://mirror.example/simple",
        "--extra-index-url",
        "file:///opt/pypi/simple",
        "--extra-index-url",
        "file:///opt/pypi-more/simple",
        "--find-links",
        "/opt/wheels",
        "--constraint",
        "/etc/xdg/pip/constraints.txt",
        "--allow-insecure-host",
        "mirror.example",
        # pip's choice: the best version over every index, not the first index that has it
        "--index-strategy",
        "unsafe-best-match",
    ]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_no_index_and_plain_pypi(deps: Any) -> None:
    assert deps.uv_options({"no-index": "true", "find-links": "/w"})[0] == [
        "--no-index",
        "--find-links",
        "/w",
        "--index-strategy",
        "unsafe-best-match",
    ]
    assert deps.uv_options({}) == ([], {})


def test_a_setting_uv_would_not_honour_leaves_the_install_to_pip(deps: Any) -> None:
    with pytest.raises(deps.Untranslatable, match="only-binary"):
        deps.uv_options({"only-binary": ":all:"})


def test_the_kept_uv_lives_in_the_user_cache(deps: Any, tmp_path: Path) -> None:
    kept = deps.kept_uv_dir({"XDG_CACHE_HOME": str(tmp_path)})
    assert kept == tmp_path / "transcripts" / "uv"
