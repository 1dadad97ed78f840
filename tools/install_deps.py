"""Install the project (editable, with its dev extras) into the virtualenv running this script:
with uv when it can be had (a few seconds), with pip otherwise or when uv fails.

    .venv/bin/python tools/install_deps.py [--uv CMD] [REQUIREMENT ...]

`--uv` names the uv to use (default `uv`): on PATH, else the one this script keeps in the
user's cache (`~/.cache/transcripts/uv`, installed there once with pip from the package
index); an empty `--uv ''` means pip only. uv does not read pip's configuration, so the
indexes, find-links and constraints pip would use (its pip.conf files and PIP_* variables)
are handed to uv as flags, with pip's "best version over every index" strategy; a pip setting
this script cannot translate, or any failure of uv, means pip does the install instead. The
virtualenv may come without pip (`python -m venv --without-pip`, a tenth of a second): uv
adds it, and the pip path bootstraps it with ensurepip. Both keep their wheel caches between
runs (uv's in ~/.cache/uv, pip's in ~/.cache/pip; XDG_CACHE_HOME, UV_CACHE_DIR and
PIP_CACHE_DIR move them). Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import configparser
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
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


def pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files in the order pip reads them (a later one wins): global,
    user, the virtualenv's own, then PIP_CONFIG_FILE; none when that is the null device."""
    named = environ.get("PIP_CONFIG_FILE", "")
    if named == os.devnull:
        return []
    home = Path.home()
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(os.pathsep) if d]
    files.append(Path("/etc/pip.conf"))
    files.append(home / ".pip" / "pip.conf")
    files.append(home / "Library" / "Application Support" / "pip" / "pip.conf")
    files.append(Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf")
    files.append(Path(sys.prefix) / "pip.conf")
    if named:
        files.append(Path(named))
    return files


def pip_settings(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """pip's effective settings for `install`, as pip merges them: the files in order, in each
    the [global] then the [install] section, then the PIP_* variables over all of them."""
    settings: dict[str, str] = {}
    for path in pip_config_files(environ):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error) as exc:
            raise Untranslatable(f"cannot read {path}: {exc}") from None
        for section in ("global", "install"):
            if parser.has_section(section):
                for name, value in parser.items(section):
                    settings[name.replace("_", "-")] = value
    for key, value in environ.items():
        if key.startswith("PIP_") and key != "PIP_CONFIG_FILE":
            settings[key[4:].lower().replace("_", "-")] = value
    return settings


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


def kept_uv_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where this script keeps the uv it installed: the user's cache, outside every clone."""
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "transcripts" / "uv"


def ensure_pip() -> None:
    """pip in this virtualenv (ensurepip when it was created without)."""
    probe = [sys.executable, "-m", "pip", "--version"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        ensurepip = [sys.executable, "-m", "ensurepip", "--default-pip"]
        subprocess.run(ensurepip, stdout=subprocess.DEVNULL, check=True)


def find_uv(command: str) -> str | None:
    """The uv to run: `command` on PATH (or a path), else for the default `uv` the one kept in
    the user's cache, installed there with pip when missing; None when there is none."""
    found = shutil.which(command)
    if found or command != "uv":
        return found
    kept = kept_uv_dir()
    found = shutil.which("uv", path=str(kept / "bin"))
    if found:
        return found
    say(f"uv is not on PATH: installing {UV_REQUIREMENT} into {kept} with pip (once)")
    try:
        ensure_pip()
        kept.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="uv-", dir=kept.parent))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                staging,
                UV_REQUIREMENT,
            ],
            check=True,
        )
        try:
            staging.rename(kept)  # whole or not at all; another install may have won the race
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        say(f"cannot install uv: {exc}")
        return None
    return shutil.which("uv", path=str(kept / "bin"))


def install_with_uv(uv: str, requirements: Sequence[str]) -> bool:
    try:
        flags, extra_env = uv_options(pip_settings())
    except (Untranslatable, ValueError) as exc:
        say(f"{exc}: installing with pip")
        return False
    command = [uv, "pip", "install", "--quiet", "--python", sys.executable, *flags]
    command += [*requirements, "pip"]  # pip too, as `python -m venv` would have put it there
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
    ensure_pip()
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
    uv = find_uv(args.uv.strip()) if args.uv.strip() else None
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
