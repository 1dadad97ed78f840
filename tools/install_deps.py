"""Install the project (editable, with its dev extras) into the virtualenv running this script:
with uv when it can be had (a few seconds), with pip otherwise or when uv fails.

    .venv/bin/python tools/install_deps.py [--uv CMD] [REQUIREMENT ...]

`--uv` names the uv to use (default `uv`): found on PATH or in the virtualenv, else installed
into the virtualenv from the package index with pip; an empty `--uv ''` means pip only. uv
does not read pip's configuration, so the indexes, find-links and constraints pip would use
(`pip config list`: pip.conf files and PIP_* variables) are handed to uv as flags, with pip's
"best version over every index" strategy; a pip setting this script cannot translate, or any
failure of uv, means pip does the install instead. Both keep their wheel caches between runs
(uv's in ~/.cache/uv, pip's in ~/.cache/pip; UV_CACHE_DIR / PIP_CACHE_DIR move them).
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

DEFAULT_REQUIREMENTS = ["-e", ".[dev]"]
UV_REQUIREMENT = "uv>=0.5,<1"

# pip settings that say nothing about which packages get installed from where.
HARMLESS = {
    "disable-pip-version-check",
    "no-cache-dir",
    "cache-dir",
    "progress-bar",
    "root-user-action",
    "no-input",
    "quiet",
    "verbose",
    "no-color",
    "retries",
    "log",
    "no-python-version-warning",
    "require-virtualenv",
    "break-system-packages",
    "user",
    "no-warn-script-location",
    "upgrade-strategy",
}


class Untranslatable(Exception):
    """A pip setting uv would not honour the same way: pip has to do this install."""


def say(message: str) -> None:
    print(f"install: {message}", file=sys.stderr, flush=True)


def pip_settings(python: str) -> dict[str, str]:
    """pip's effective settings for `install`, by precedence: environment over the install
    section over the global section (`pip config list` has already merged the files)."""
    out = subprocess.run(
        [python, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    ).stdout
    ranked: dict[str, tuple[int, str]] = {}
    rank = {"global": 0, "install": 1, ":env:": 2}
    for line in out.splitlines():
        key, sep, raw = line.partition("=")
        section, dot, name = key.rpartition(".")
        if not sep or not dot or section not in rank:
            continue
        value = raw.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if name not in ranked or rank[section] >= ranked[name][0]:
            ranked[name] = (rank[section], value)
    return {name: value for name, (_, value) in ranked.items()}


def _true(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def uv_options(settings: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv flags and environment for the same sources pip would install from;
    Untranslatable for a setting that changes what pip installs and is not handled here."""
    flags: list[str] = []
    env: dict[str, str] = {}
    extra = False
    for name, value in settings.items():
        if name in HARMLESS:
            continue
        items = value.split()
        if name in {"index-url", "i"}:
            flags += ["--index-url", value]
        elif name == "extra-index-url":
            for url in items:
                flags += ["--extra-index-url", url]
            extra = extra or bool(items)
        elif name in {"find-links", "f"}:
            for location in items:
                flags += ["--find-links", location]
            extra = extra or bool(items)
        elif name in {"constraint", "c"}:
            for path in items:
                flags += ["--constraint", path]
        elif name == "no-index":
            if _true(value):
                flags.append("--no-index")
        elif name == "trusted-host":
            for host in items:
                flags += ["--allow-insecure-host", host]
        elif name == "pre":
            if _true(value):
                flags += ["--prerelease", "allow"]
        elif name == "cert":
            env["SSL_CERT_FILE"] = value
        elif name in {"timeout", "default-timeout"}:
            env["UV_HTTP_TIMEOUT"] = str(int(float(value)))
        elif name == "proxy":
            env["HTTP_PROXY"] = env["HTTPS_PROXY"] = value
        else:
            raise Untranslatable(f"pip setting {name}={value!r}")
    if extra:
        # pip picks the best version over every index and find-links; uv by default stops at
        # the first index that has the package.
        flags += ["--index-strategy", "unsafe-best-match"]
    return flags, env


def find_uv(command: str, venv_bin: Path) -> str | None:
    """The uv to run: `command` on PATH or in the virtualenv, else installed there with pip
    (the default `uv` only); None when there is none to be had."""
    found = shutil.which(command) or shutil.which(command, path=str(venv_bin))
    if found or command != "uv":
        return found
    say(f"uv is not on PATH: installing {UV_REQUIREMENT} into the virtualenv with pip")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", UV_REQUIREMENT], check=False
    )
    return shutil.which("uv", path=str(venv_bin)) if done.returncode == 0 else None


def install_with_uv(uv: str, requirements: Sequence[str]) -> bool:
    try:
        flags, extra_env = uv_options(pip_settings(sys.executable))
    except (Untranslatable, subprocess.CalledProcessError, ValueError) as exc:
        say(f"{exc}: installing with pip")
        return False
    command = [uv, "pip", "install", "--quiet", "--python", sys.executable, *flags]
    command += list(requirements)
    env = {**os.environ, **{k: v for k, v in extra_env.items() if k not in os.environ}}
    try:
        done = subprocess.run(command, env=env, check=False)
    except OSError as exc:
        say(f"cannot run {uv}: {exc}; installing with pip")
        return False
    if done.returncode != 0:
        say(f"`{shlex.join(command)}` failed ({done.returncode}): installing with pip")
        return False
    return True


def install_with_pip(requirements: Sequence[str]) -> None:
    python = sys.executable
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", *requirements], check=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default="uv", help="the uv command; '' to install with pip")
    parser.add_argument(
        "requirements", nargs="*", help=f"default: {' '.join(DEFAULT_REQUIREMENTS)}"
    )
    args = parser.parse_args(argv)
    if sys.prefix == sys.base_prefix:
        say("run me with the virtualenv's python (.venv/bin/python)")
        return 2
    requirements = args.requirements or DEFAULT_REQUIREMENTS
    uv = find_uv(args.uv, Path(sys.executable).parent) if args.uv.strip() else None
    if uv is not None and install_with_uv(uv, requirements):
        return 0
    if args.uv.strip() and uv is None:
        say(f"no {args.uv!r} to run: installing with pip")
    try:
        install_with_pip(requirements)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
