"""Whether a result record agrees with itself: a record is believed only when its status is one its own metrics,
operator status, expectation and known defect allow (``contradiction``). ``store.read`` refuses any other, naming
its line, so that a status edited alone (a hand-edited ``failed`` -> ``passed``) never reaches a report, a compare
or a resume.

``store.read`` also holds a record against its run's settings: a ``passed`` record carrying a warning from a
``--strict`` run, which fails every such case (``execute.strict_status``), is refused too.

A results file is not signed: this catches a record that contradicts itself, not one forged whole (every field
edited to agree); docs/scale.md says what a results file does and does not protect against.
"""

from __future__ import annotations

import math

from ..results import CaseResult


def contradiction(record: CaseResult) -> str:
    """"" when nothing in ``record`` contradicts its status, else why, in words. The rules:

    - ``skipped`` and ``not_run``: the case never launched, so it holds no metric and no operator status;
    - ``passed``, expecting a pass: the operator returned 0 (or nothing recorded), no element outside the slice
      changed, every standard's and check's margin is at most 1 (``verdict_metrics.margins``: error / limit, > 1 fails),
      no element is over its limit (``bad``: a standard that counts them fails on any) and under ``exact`` no
      element mismatched;
    - ``passed``, expecting an error: the operator returned a status other than 0;
    - ``xfailed`` and ``xpassed``: the case names a known defect, and so does its recorded ``definition`` (when it
      holds one: a ``failed`` edited to ``xfailed`` with a known defect named beside it);
    - a verdict a gate takes as green (``StatusInfo.ok``: passed, xfailed, skipped) whose case has no ``file:``
      input: its ``fingerprint`` is that of its own ``definition`` (``loader.definition_fingerprint``; a definition
      edited to name a known defect or a weaker tolerance, its fingerprint left as the run wrote it);
    - a record of several devices (``device_statuses``, ``--each-device``) holds each device's status, its own is
      the worst of them (a ``failed`` device edited to ``passed`` alone, or the record's status alone), and its
      ``device`` names the devices of that status, in their order (``execute.combined``; compare reads the chips).
    """
    from ..judging.verdict_metrics import margins
    from ..results import STATUSES

    status, metrics = record.status, record.metrics
    seen = record.device_statuses
    if seen and not (all(isinstance(value, str) and value in STATUSES for value in seen.values())
                     and max(STATUSES[value].severity for value in seen.values()) == record.info.severity):
        return f"status {status}, but its devices' statuses are {', '.join(map(str, seen.values()))}"
    worst = [device for device, value in seen.items() if value == status]
    if seen and record.device.split(",") != worst:
        return f"device {record.device!r}, but its devices' statuses give {status} on {', '.join(worst)}"
    edited = _definition_edited(record)
    if edited:
        return edited
    if status in ("skipped", "not_run"):
        if metrics or record.error_code is not None:
            return f"status {status} (never launched) but it holds {'metrics' if metrics else 'an operator status'}"
        return ""
    if status in ("xfailed", "xpassed") and not record.known_defect:
        return f"status {status} but the case names no known defect"
    if status in ("xfailed", "xpassed") and record.definition and not record.definition.get("known_defect"):
        return f"status {status} but the definition of its case names no known defect"
    if status != "passed":
        return ""
    if record.expect != "pass":
        return "" if record.error_code not in (None, 0) else \
            f"status passed expecting {record.expect}, but the operator returned no error"
    if record.error_code not in (None, 0):
        return f"status passed, but the operator returned {record.error_code}"
    if metrics.get("outside_changed"):
        return f"status passed, but outside_changed is {metrics['outside_changed']}"
    over = [(key, value) for key, value in margins(metrics) if not (math.isnan(value) or value <= 1)]
    if over:
        return f"status passed, but its {over[0][0]} is over its limit (margin {over[0][1]:.3g} > 1)"
    if metrics.get("bad"):
        return f"status passed, but {metrics['bad']} elements are over their limit (bad)"
    if record.standard == "exact" and metrics.get("mismatches"):
        return f"status passed under exact, but {metrics['mismatches']} elements mismatch"
    return ""


def _definition_edited(record: CaseResult) -> str:
    """Why ``record``, a verdict a gate takes as green, holds a ``definition`` and a ``fingerprint`` that are not each
    other's (``contradiction``; no fingerprint is none: ``prmg report --cases`` would not hold the verdict against
    today's case), or "": also for a record of another status, one without a definition, one whose definition
    names no generator (records before it: their fingerprint hashed another shape of it) or has a ``file:`` input
    (its fingerprint hashes the file's bytes)."""
    from ..cases.loader import definition_fingerprint

    definition, inputs = record.definition, record.definition.get("inputs")
    if not record.info.ok or "generator" not in definition or (
            isinstance(inputs, dict) and any(isinstance(spec, dict) and "file" in spec for spec in inputs.values())):
        return ""
    if definition_fingerprint(definition) != record.fingerprint:
        return f"status {record.status}, but its fingerprint is not that of its case's definition (either edited)"
    return ""
