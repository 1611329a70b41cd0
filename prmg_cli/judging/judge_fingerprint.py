"""What identifies the judge a verdict came from, beyond the names a record carries: the limits of each standard
(``limits``) and the code that judges (``code``). prmg's version number does not tell two builds apart, and a
standard's name stays when its table changes: a run judged by a build whose ``default`` budget was scaled up, or whose
golden or judge changed, reads as judged like any other. Both fingerprints go into every run record's settings
(``run_record.recorded_settings``), so ``--resume`` takes a verdict only from the same judge, ``prmg report`` names
shards judged by other ones, and ``prmg compare`` calls a case not comparable.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

# The packages whose code decides a verdict: the judging (standards, checks, the judge), the operators' golden, and
# the compiled one-pass judge of ``default`` (its C source), as paths below ``prmg_cli``.
JUDGING_CODE = ("judging", "ops", "native")
CODE_SUFFIXES = (".py", ".c")
DIGITS = 16                     # hex digits kept of each sha256


def limits(standard) -> str:
    """The first ``DIGITS`` hex digits of the sha256 of the canonical JSON of ``standard``'s (a ``base.Standard``)
    name, ``defaults`` (its parameters per dtype) and ``presets``: two tables of one name that differ in a single
    limit (a ``budget_scale`` of 1 against 4) have other fingerprints."""
    table = {"name": standard.name, "defaults": standard.defaults,
             "presets": {key: {str(name): values for name, values in presets.items()}
                         for key, presets in standard.presets.items()}}
    return hashlib.sha256(json.dumps(table, sort_keys=True, default=repr).encode()).hexdigest()[:DIGITS]


def all_limits() -> dict[str, str]:
    """``limits`` of every standard of ``standards.STANDARDS``, by name."""
    from .standards import STANDARDS

    return {name: limits(standard) for name, standard in STANDARDS.items()}


@functools.cache
def code() -> str:
    """``code_of`` this prmg's package (about 30 files, a millisecond; read once per process)."""
    return code_of(Path(__file__).resolve().parent.parent)


def judging_files(package: Path) -> list[Path]:
    """The source files (``CODE_SUFFIXES``) of the ``JUDGING_CODE`` packages below ``package``, in path order."""
    return sorted(path for folder in JUDGING_CODE for path in (package / folder).rglob("*")
                  if path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts)


def code_of(package: Path) -> str:
    """The first ``DIGITS`` hex digits of the sha256 of every file of ``judging_files(package)``, each as its path
    below ``package`` and its bytes, in path order: any edit of the judge, a comment's too, makes another
    fingerprint."""
    digest = hashlib.sha256()
    for path in judging_files(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:DIGITS]
