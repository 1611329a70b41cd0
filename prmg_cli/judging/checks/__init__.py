"""Golden-free checks on the device: one module per check, each holding one ``base.Check`` record; ``CHECKS`` is
the registry (adding a check is one module and one line here).

A case asks for them with ``checks: [adjoint, roundtrip, determinism]`` (or ``prmg run --check``);
``golden: false`` judges a case by its checks (and the in-place contract) alone, for shapes too large
for a host golden and as an oracle independent of the golden's reading of the docs. Each check launches
what it needs on the device, reports its own metric (``<name>_ratio`` or ``<name>_mismatches``, <= 1 or 0
when it holds) and a message when it fails. Only a check ``anchored`` to the formula (``sample``: the host
reference on sampled rows) can judge a case without the golden: adjoint and roundtrip compare the device's
kernels with each other, so a grad and a forward wrong in the same way pass both.

Each check's module states what it checks and the bound it uses (``base`` the element bound they share).

**Where a check is not defined** (``Check.applies``) it is skipped with the reason (a no-op call: an empty
slice, tensor or table; NaN, infinities or values whose results overflow the dtype, for adjoint, whose inner
products would not be numbers; a case the other operator's rules refuse, for adjoint and roundtrip: the forward takes
no odd D, which the grad does). **Every launch a check makes** gets the in-place contract checks of the main launch
(``judge.launch_problems``: guard zones, workspace, cos and sin, the tensor outside the slice); a breach
fails the case like one on the main launch.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from . import adjoint, determinism, roundtrip, sample
from ...case import Case
from ...errors import PrmgError, suggest
from ...ops import OPERATORS
from .base import Check, CheckContext, CheckOption, CheckResult, element_bound, no_op
from .sample import unchanged_warning

CHECKS: dict[str, Check] = {module.CHECK.name: module.CHECK for module in (adjoint, roundtrip, determinism, sample)}
ALL = "all"                             # the name of every check at once (--check all)
ORACLES = tuple(name for name, check in CHECKS.items() if check.oracle)
ANCHORED = tuple(name for name, check in CHECKS.items() if check.anchored)
OPTIONS: dict[str, tuple[Check, CheckOption]] = {name: (check, option) for check in CHECKS.values()
                                                 for name, option in check.options.items()}

__all__ = ["CHECKS", "ALL", "ORACLES", "ANCHORED", "OPTIONS", "Check", "CheckContext", "CheckOption", "CheckResult",
           "element_bound",
           "check_names", "run_checks", "fold_checks", "weak_checks_text"]


def check_names(names: Sequence, shown: Callable[[object], str] = repr) -> tuple[str, ...]:
    """``names`` without repeats, in order, when each is a check of ``CHECKS`` or ``ALL`` (every check, in
    ``CHECKS``' order); else ``PrmgError`` (field ``checks``) naming the first that is not, as ``shown`` renders it
    (a case file's value may be anything), and the closest check: ``unknown check 'ajoint' (did you mean
    'adjoint'?) (valid: adjoint, ..., or all)``. The one check of check names: ``--check`` and a case's ``checks``
    both use it."""
    for name in names:
        if not (isinstance(name, str) and (name in CHECKS or name == ALL)):
            raise PrmgError(f"unknown check {shown(name)}{suggest(name, [*CHECKS, ALL])} (valid: "
                            f"{', '.join(CHECKS)}, or {ALL})", field="checks")
    return tuple(dict.fromkeys(check for name in names for check in (CHECKS if name == ALL else (name,))))


def weak_checks_text(names) -> str:
    """Why ``names`` do not anchor a result to the formula: ``determinism: ...`` for each check not ``anchored``."""
    return "; ".join(f"{name}: {CHECKS[name].description}" for name in names if not CHECKS[name].anchored) \
        or "no check named"


def run_checks(names, context: CheckContext) -> list[CheckResult]:
    """Every check of ``names`` on ``context``; those marked ``first`` (determinism) first, so that their repeats
    follow the main launch directly. A check not defined
    for the case is skipped with its reason; every launch a check makes is held to the in-place contract
    (``judge.launch_problems``), its breaches kept in the result's ``contract``."""
    from ..judge import launch_problems

    results = []
    for name in sorted(names, key=lambda name: not CHECKS[name].first):
        check = CHECKS[name]
        reason = check.applies(context)
        if reason:
            results.append(CheckResult(name, skipped=reason))
            continue
        breaches: list[str] = []

        def launch(case: Case, inputs, breaches=breaches, **how):
            outcome = context.launch(case, inputs, **how)
            breaches.extend(f"{name}: launch of {OPERATORS[case.op].title}: {problem}"
                            for problem in launch_problems(case, inputs, outcome))
            return outcome

        result = check.run(dataclasses.replace(context, launch=launch))
        result.contract = breaches
        results.append(result)
    return results


def _explained(result: CheckResult, verdict) -> bool:
    """Whether the failure of check ``result`` may be the wrong result the golden found (``verdict.arrays``' score
    over 1), which a wrong-result known defect then explains: a check of values (an oracle; determinism judges none)
    that cannot say where it failed, or whose failing rows (``CheckResult.rows``) each hold an element the golden
    finds wrong -- adjoint failing in a row the golden passes has found the other operator wrong there."""
    if not CHECKS[result.name].oracle:
        return False
    score = verdict.arrays.get("score")
    if result.rows is None:
        return True
    if score is None:
        return False
    wrong = np.flatnonzero((score > 1).reshape(-1, score.shape[-1]).any(axis=1))
    return bool(np.isin(result.rows, wrong).all())


def fold_checks(verdict, results: list[CheckResult], context: CheckContext, golden: bool):
    """``verdict`` (a ``judge.Verdict``) with the checks' ``results`` of ``context``'s launch folded in: their metrics
    and details, their launches' contract breaches and failures (each fails the case), a check that could not run as
    a warning and one not defined for the case as a detail; without the ``golden``, the checks' warnings (sample's
    error balance) and a slice the kernel left (nearly) as it was as a warning (``sample.unchanged_warning``), and a
    case with a slice that no check anchored to the formula judged (none named, all skipped or unable to run) an
    ``error`` -- nothing held its result to the formula: adjoint and roundtrip pass a grad and a forward wrong the
    same way -- unless it says why with ``correctness_unchecked`` (then a warning)."""
    case = context.case
    if not golden and not no_op(case):
        unchanged = unchanged_warning(case, context.inputs, context.outcome.dy)
        if unchanged:
            verdict.warnings.append(unchanged)
    for result in results:
        verdict.metrics.update(result.metrics)
        verdict.details.extend(result.details)
        for breach in result.contract:
            verdict.fail("contract", breach)
        if result.skipped:
            verdict.details.append(f"{result.name} skipped: {result.skipped}")
        elif result.note:
            verdict.warnings.append(f"{result.name} not run: {result.note}")
        elif not result.passed:
            verdict.fail("check" if _explained(result, verdict) else "unexplained", result.message)
        if not golden:
            verdict.warnings.extend(result.warnings)
    if golden or no_op(case) or any(result.judged and CHECKS[result.name].anchored for result in results):
        return verdict
    why = "; ".join(f"{r.name} {'skipped' if r.skipped else 'not run'}: {r.skipped or r.note}"
                    for r in results if not r.judged) or weak_checks_text([r.name for r in results])
    if case.correctness_unchecked:
        verdict.warnings.append(f"correctness not checked: {case.correctness_unchecked} ({why})")
        return verdict
    verdict.fail("unjudged", f"not judged: without the golden no check anchored to the formula ran ({why})")
    if verdict.kinds == {"unjudged"}:
        verdict.status = "error"
    return verdict
