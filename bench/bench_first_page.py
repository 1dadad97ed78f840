"""A first page on a fresh clone: `git clone` → `make serve` → the first 200 of `/`.

Each scenario clones this repository into a temporary directory, starts `make serve` on a free
port and asks `/` every 0.1 s from the moment make starts, until it answers 200 (its redirect
to the login page followed); the clock runs from the clone. Then it signs in as the admin serve
created and checks the thread list shows the demo threads (a page served before they were
loaded would fail the bench). Scenarios (the caches are temporary directories: the user's own
stay untouched):

- uv, cold: empty caches (a new machine: uv and every wheel downloaded);
- uv, warm: the same caches again (every later clone on this machine);
- pip, cold / warm: the same with uv turned off (`make serve UV=`), the baseline.

Phases are read from the time each line of make's output arrived: the clone, the install
(until make runs `manage.py serve`), the embedded cluster, migrations and demo data (until
serve says "serving on", or until `Demo data` for the part before it), and the first 200.
Goal: the first page in ≤ 15 s with warm caches.

    python bench/bench_first_page.py            # uv cold + warm, pip cold + warm
    python bench/bench_first_page.py --only uv  # without the pip baseline
    python bench/bench_first_page.py --warm-only
"""

from __future__ import annotations

import argparse
import http.client
import http.cookiejar
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 15.0
# Titles of the demo threads (transcripts/demo.py) the first page must list.
DEMO_TITLES = [
    "Weather agent: should I bike to work?",
    "Haiku about PostgreSQL (regenerated twice, prompt edited)",
    "Planner and coder agents fix a failing test",
]
# Markers in make's output, in order, and the phase each one ends.
MARKERS = [
    ("manage.py serve", "install"),
    ("Demo data", "cluster + migrate + demo"),
    ("serving on", "admin + worker + listen"),
]


@dataclass
class Result:
    """One scenario: seconds from the clone's start to each phase's end and the first 200."""

    label: str
    first_page: float | None = None
    demo_threads: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    lines: list[tuple[float, str]] = field(default_factory=list)
    error: str = ""

    def span(self, since: str, until: str) -> float | None:
        """Seconds between the ends of two phases (None when one was not seen)."""
        if since in self.phases and until in self.phases:
            return self.phases[until] - self.phases[since]
        return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def current_branch() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--abbrev-ref", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def answers_200(port: int) -> bool:
    """`/` answers 200 once its redirects are followed (a visitor's first page: the login)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, http.client.HTTPException):
        return False


def demo_threads_listed(port: int, password: str) -> int:
    """Signed in as the admin serve created: how many demo threads the thread list shows."""
    base = f"http://127.0.0.1:{port}"
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/accounts/login/", timeout=30) as response:
        form = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, "no CSRF token on the login page"
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token.group(1), "username": "admin", "password": password}
    ).encode()
    login = urllib.request.Request(
        f"{base}/accounts/login/?next=/", data=body, headers={"Referer": f"{base}/accounts/login/"}
    )
    with opener.open(login, timeout=30) as response:
        page = response.read().decode()
    return sum(title in page for title in DEMO_TITLES)


def run_scenario(
    label: str, *, repo: str, ref: str, caches: Path, uv: bool, timeout: float
) -> Result:
    """Clone, `make serve`, wait for the first 200; always stops the server and the cluster."""
    result = Result(label)
    work = Path(tempfile.mkdtemp(prefix="bench-first-page-"))
    clone = work / "clone"
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "DATABASE_URL"}}
    env.pop("TRANSCRIPTS_PGDATA", None)
    env.pop("BENCH_RECORD", None)
    # Every cache of the install in one place: uv's and pip's wheels, and the uv that
    # tools/install_deps.py keeps when there is none on PATH.
    env["XDG_CACHE_HOME"] = str(caches)
    env["UV_CACHE_DIR"] = str(caches / "uv")
    env["PIP_CACHE_DIR"] = str(caches / "pip")
    port = free_port()
    command = ["make", "serve", f"PORT={port}"] + ([] if uv else ["UV="])
    server: subprocess.Popen[str] | None = None
    start = time.perf_counter()
    try:
        subprocess.run(
            ["git", "clone", "-q", repo, str(clone), "-b", ref], check=True, capture_output=True
        )
        result.phases["clone"] = time.perf_counter() - start
        server = subprocess.Popen(
            command,
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        reader = threading.Thread(target=_read_lines, args=(server, start, result), daemon=True)
        reader.start()
        while time.perf_counter() - start < timeout:
            if answers_200(port):
                result.first_page = time.perf_counter() - start
                password = (clone / ".data" / "admin-password.txt").read_text().strip()
                result.demo_threads = demo_threads_listed(port, password)
                break
            if server.poll() is not None:
                result.error = f"make serve exited with {server.returncode}"
                break
            time.sleep(0.1)
        else:
            result.error = f"no 200 within {timeout:.0f} s"
    except subprocess.CalledProcessError as exc:
        result.error = f"{exc.cmd[:2]} failed: {exc.stderr!r}"
    finally:
        if server is not None:
            _stop(server)
        python = clone / ".venv" / "bin" / "python"
        if python.exists():
            subprocess.run(
                [str(python), "manage.py", "embedded_db", "stop"],
                cwd=clone,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(work, ignore_errors=True)
    for marker, phase in MARKERS:
        for at, line in result.lines:
            if marker in line:
                result.phases.setdefault(phase, at)
                break
    if result.error:
        tail = "\n".join(f"    {line}" for _, line in result.lines[-15:])
        print(f"{label}: {result.error}\n{tail}", flush=True)
    return result


def _read_lines(server: subprocess.Popen[str], start: float, result: Result) -> None:
    assert server.stdout is not None
    for line in server.stdout:
        result.lines.append((time.perf_counter() - start, line.rstrip()))


def _stop(server: subprocess.Popen[str]) -> None:
    """SIGTERM to make's process group (make, serve, uvicorn, the worker), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def report(result: Result) -> None:
    """The scenario's phases, each as the seconds it took and when it ended."""
    print(f"{result.label}:", flush=True)
    previous = 0.0
    ends = sorted(result.phases.items(), key=lambda item: item[1])
    if result.first_page is not None:
        ends.append(("first 200", result.first_page))
    for phase, at in ends:
        print(f"  {phase:<28} {at - previous:6.1f} s  (at {at:5.1f} s)", flush=True)
        previous = at
    if result.first_page is not None:
        print(f"  signed in, the thread list shows {result.demo_threads} of the demo threads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(ROOT), help="what to clone (default: this one)")
    parser.add_argument("--ref", default="", help="branch to clone (default: the current one)")
    parser.add_argument("--only", choices=["uv", "pip"], help="one installer, no baseline")
    parser.add_argument("--warm-only", action="store_true", help="skip the cold-cache runs")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per scenario")
    args = parser.parse_args()
    ref = args.ref or current_branch()
    print(f"fresh clone of {args.repo} ({ref}) → make serve → first 200 of /", flush=True)
    installers = [args.only] if args.only else ["uv", "pip"]
    results: dict[tuple[str, str], Result] = {}
    with tempfile.TemporaryDirectory(prefix="bench-first-page-caches-") as tmp:
        for installer in installers:
            caches = Path(tmp) / installer
            temperatures = ["warm"] if args.warm_only else ["cold", "warm"]
            if args.warm_only:
                # Warm the caches with one install that is not timed.
                run_scenario(
                    f"{installer}, warming",
                    repo=args.repo,
                    ref=ref,
                    caches=caches,
                    uv=installer == "uv",
                    timeout=args.timeout,
                )
            for temperature in temperatures:
                label = f"{installer}, {temperature} caches"
                result = run_scenario(
                    label,
                    repo=args.repo,
                    ref=ref,
                    caches=caches,
                    uv=installer == "uv",
                    timeout=args.timeout,
                )
                report(result)
                results[(installer, temperature)] = result
    for (installer, temperature), result in results.items():
        if result.first_page is None:
            continue
        pip = results.get(("pip", temperature))
        uv = installer == "uv" and pip is not None
        pip_first = pip.first_page if uv and pip is not None else None
        goal = installer == "uv" and temperature == "warm"
        figure(
            f"first page on a fresh clone, {installer}, {temperature} caches",
            result.first_page,
            "s",
            goal=f"<= {GOAL_SECONDS:.0f} s" if goal else "",
            ok=result.first_page <= GOAL_SECONDS if goal else None,
            baseline=(f"pip, {temperature} caches", pip_first) if pip_first else None,
        )
        install = result.span("clone", "install")
        pip_install = pip.span("clone", "install") if pip else None
        if install is not None:
            figure(
                f"install, {installer}, {temperature} caches",
                install,
                "s",
                baseline=(f"pip, {temperature} caches", pip_install)
                if uv and pip_install
                else None,
            )
        after = result.span("install", "admin + worker + listen")
        if after is not None and installer == "uv":
            figure(f"manage.py serve → listening, {temperature} caches", after, "s")
    if any(r.first_page is None or r.demo_threads < len(DEMO_TITLES) for r in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
