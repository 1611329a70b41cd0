"""Progress of a run on stderr: a redrawn bar on a terminal, a line every few seconds in CI logs.

On a terminal: ``[#####.....] 57/300 1F 0E ETA 0:12 case_name``, redrawn after every case and erased
at the end. Elsewhere (a CI log): ``prmg: 57/300 done (1 failed, 0 errors), ETA 0:12`` at most every
``interval`` seconds, and nothing for a run shorter than that. The ETA is the mean time per finished
case times the cases left.
"""

from __future__ import annotations

import shutil
import sys
import time

from ..results import CaseResult, plural, visible


def eta_text(seconds: float) -> str:
    """``1:02:03`` or ``2:03`` for a number of seconds."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts finished cases and shows progress on ``stream`` (module docstring)."""

    WIDTH = 20

    def __init__(self, total: int, stream=None, interval: float = 30.0, clock=time.monotonic):
        self.total = total
        self.done = 0
        self.failed = 0
        self.errors = 0
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.last_line = self.started
        self._drawn = False

    def eta(self, now: float) -> float:
        """Seconds still to go at time ``now`` at the mean pace so far."""
        if not self.done:
            return 0.0
        return (now - self.started) / self.done * (self.total - self.done)

    def update(self, result: CaseResult) -> None:
        """Count one more finished case and show it."""
        self.done += 1
        self.failed += result.info.junit == "failure"             # failed, xpassed
        self.errors += result.info.junit == "error"               # error, not_run
        now = self.clock()
        try:
            if self.terminal:
                self._draw(result, now)
            elif self.interval and now - self.last_line >= self.interval:
                self.last_line = now
                self.stream.write(f"prmg: {self.done}/{self.total} done ({self.failed} failed, "
                                  f"{plural(self.errors, 'error')}), ETA {eta_text(self.eta(now))}\n")
                self.stream.flush()
        except OSError:
            self.terminal = False
            self.interval = 0              # a closed or full stderr stops progress, not the run

    def _draw(self, result: CaseResult, now: float) -> None:
        filled = self.WIDTH * self.done // max(self.total, 1)
        line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} "
                f"{self.failed}F {self.errors}E ETA {eta_text(self.eta(now))} {visible(result.name)}")
        columns = shutil.get_terminal_size().columns - 1
        self.stream.write("\r" + line[:columns].ljust(columns))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar so that what is printed next starts on a clean line."""
        if self._drawn:
            columns = shutil.get_terminal_size().columns - 1
            try:
                self.stream.write("\r" + " " * columns + "\r")
                self.stream.flush()
            except OSError:
                pass
            self._drawn = False
