"""The results file: results appended as JSON lines as they finish; ``--resume`` reads them back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import PrmgError
from .results import STATUSES, CaseResult


class ResultsFile:
    """Results appended as JSON lines as they finish; ``--resume`` reads them back.

    Opened (for appending) when made, so that a path that cannot be written is a user error before
    anything runs.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise PrmgError(f"cannot write the results file: {exc.strerror}", file=str(path)) from None

    def append(self, result: CaseResult) -> None:
        """Write ``result`` as one JSON line and flush it to disk."""
        self._handle.write(json.dumps(result.to_dict(), default=str) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_results(path: str | Path) -> dict[str, CaseResult]:
    """The results recorded in a JSON-lines file, by case name (a torn last line is ignored)."""
    recorded: dict[str, CaseResult] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return recorded
    except OSError as exc:
        raise PrmgError(f"cannot read results file: {exc.strerror}", file=str(path)) from None
    for line in lines:
        try:
            record = json.loads(line)
            result = CaseResult.from_dict(record) if isinstance(record, dict) else None
        except (ValueError, TypeError):
            continue
        if result is not None and result.status in STATUSES:
            recorded[result.name] = result
    return recorded
