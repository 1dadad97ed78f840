"""The supervisor `manage.py serve` runs beside the web server: one worker process
(`manage.py worker`) kept running."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

from django.conf import settings


class WorkerSupervisor:
    """Keeps one generation worker running beside the server: starts it again whenever it
    exits (killed, crashed), after a pause that doubles while it keeps dying young; waits for
    each one, so none is left a zombie."""

    FIRST_PAUSE = 1.0
    LONGEST_PAUSE = 30.0
    # A worker that ran this long died of something new: the next restart is quick again.
    STEADY_AFTER = 60.0

    def __init__(self, command: list[str], *, say: Callable[[str], None]) -> None:
        self.command = command
        self.say = say
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name="worker-supervisor")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the worker (gracefully, then for good) and stop restarting it."""
        self._stopping.set()
        with self._lock:
            process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self._thread.join(timeout=15)

    def _supervise(self) -> None:
        pause = self.FIRST_PAUSE
        while True:
            with self._lock:
                if self._stopping.is_set():
                    return
                started = time.monotonic()
                # A session of its own: Ctrl-C in the terminal reaches the server, which then
                # stops the worker itself (instead of racing this loop to restart it).
                self.process = subprocess.Popen(
                    self.command, cwd=settings.BASE_DIR, start_new_session=True
                )
            pid = self.process.pid
            self.say(f"Started a generation worker (manage.py worker, pid {pid}).")
            code = self.process.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= self.STEADY_AFTER:
                pause = self.FIRST_PAUSE
            self.say(
                f"The generation worker (pid {pid}) exited with code {code}; "
                f"starting another in {pause:g} s."
            )
            if self._stopping.wait(pause):
                return
            pause = min(self.LONGEST_PAUSE, pause * 2)
