"""Two call paths held against each other (``--runner aclnn+geir``: ``runners.pair``).

``PairSession`` opens both paths on one device (``acl.AclSession`` and ``geir.GeirSession``); ``execute.run_case``
runs a case through each on the same inputs, each judged as if alone (its own expectation, contract and golden),
and ``combine`` makes the case's one result:

1. the paths must agree -- both succeeded with the same in-place tensor, bit for bit (``dtypes.bits``: NaN payloads
   and signed zeros count), or both refused for the same kind of reason (``status.kinds_agree``: GE's one status
   for a refused compile agrees with any refusal of an aclnn first phase); a path that has no form of the case
   (skipped) or could not judge it (an error) is not compared, nor are the paths of a case graph mode reads
   otherwise by design (``constraints.graph_reads_otherwise``: a slice list of no value);
2. the status is the worst of the paths' (``results.StatusInfo.severity``; a path that skipped the case counts only
   when every path did), ``failed`` when they disagree; the
   message says which path disagrees with the golden (the path whose own verdict failed, or, when both are within
   the standard, the values and the golden at the first difference and which path is nearer the golden at how
   many of the differing elements);
3. the result names its path (``aclnn+geir``) and each path's verdict (``CaseResult.paths``); its warnings are every
   path's, each named by its path (``geir: device memory: ...``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import dtypes
from ..case import Case
from ..ops import OPERATORS
from ..ops.constraints import graph_reads_otherwise
from ..results import STATUSES, CaseResult, plural
from ..status import describe, kinds_agree, refusal_kind

PATH = "aclnn+geir"
LABELS = {"geir": "geir (graph mode)"}                      # how messages name a path
COMPARED = ("passed", "failed", "xfailed", "xpassed")       # statuses of a path whose outcome is compared


class PairSession:
    """The aclnn path and graph mode on one device: ``paths`` for ``execute.run_case``; the rest is aclnn's."""

    path = PATH

    def __init__(self, toolkit, device: int = 0):
        from .acl import AclSession
        from .geir import GeirSession

        self.aclnn = AclSession(toolkit, device)
        try:
            self.geir = GeirSession(toolkit, device)
        except BaseException:
            self.aclnn.close()
            raise
        self.paths = (("aclnn", self.aclnn), ("geir", self.geir))

    def __enter__(self) -> "PairSession":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def device_faulted(self) -> bool:
        return self.aclnn.device_faulted or self.geir.device_faulted

    def soc_name(self) -> str:
        return self.aclnn.soc_name()

    def accepted_modes(self, op_name: str | None = None):
        return self.aclnn.accepted_modes() if op_name is None else self.aclnn.accepted_modes(op_name)

    def launch(self, case: Case, inputs):
        """The aclnn path's launch (a caller that wants one outcome)."""
        return self.aclnn.launch(case, inputs)

    def close(self) -> None:
        try:
            self.geir.close()
        finally:
            self.aclnn.close()


def _label(path: str) -> str:
    """A path as messages name it: ``geir (graph mode)``."""
    return LABELS.get(path, path)


def _line(result: CaseResult) -> str:
    """One path's verdict in a line: ``failed (1343225857 ge::PARAM_INVALID): <message>``."""
    code = f" ({describe(result.error_code)})" if result.error_code else ""
    return f"{result.status}{code}" + (f": {result.message}" if result.message else "")


def _value(array: np.ndarray, index: tuple) -> str:
    """An element as a number and its bits: ``0.5 (0x3f000000)``."""
    bits = int(dtypes.bits(array)[index])
    return f"{float(array[index]):.9g} (0x{bits:0{2 * array.dtype.itemsize}x})"


def _golden(case: Case, inputs) -> np.ndarray | None:
    """The golden in dy's dtype, None when it cannot be computed (a case the golden rejects)."""
    try:
        return OPERATORS[case.op].golden(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    except (ValueError, TypeError, IndexError):
        return None


def _nearer(golden: np.ndarray | None, runs: tuple, differing: np.ndarray) -> str:
    """Which path is nearer the golden where two results differ (``runs``: (path, values) twice): each path counts
    the differing elements where |value - golden| is smaller than the other's; "" without a golden."""
    if golden is None:
        return ""
    exact = golden.astype(np.float64).ravel()[differing]
    errors = [np.abs(values.astype(np.float64).ravel()[differing] - exact) for _, values in runs]
    counts = [int(np.count_nonzero(errors[0] < errors[1])), int(np.count_nonzero(errors[1] < errors[0]))]
    (first, near), (second, far) = sorted(zip((path for path, _ in runs), counts), key=lambda pair: -pair[1])
    return f"; {first} is nearer the golden at {near} of them, {second} at {far}"


def _byte_difference(case: Case, inputs, first, other) -> str:
    """Why two successful outcomes disagree ("" when their in-place tensors are bit-identical)."""
    (name, result, outcome), (other_name, other_result, other_outcome) = first, other
    a, b = outcome.dy, other_outcome.dy
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        return (f"{name} and {other_name} give results of different shapes "
                f"({None if a is None else a.shape}, {None if b is None else b.shape})")
    differing = np.flatnonzero(dtypes.bits(a).ravel() != dtypes.bits(b).ravel())
    if differing.size == 0:
        return ""
    index = tuple(int(i) for i in np.unravel_index(int(differing[0]), a.shape))
    golden = _golden(case, inputs)
    wrong = [(path, verdict) for path, verdict in ((name, result), (other_name, other_result))
             if verdict.status != "passed"]
    if len(wrong) == 1:
        blame = f"{_label(wrong[0][0])} disagrees with the golden: {wrong[0][1].message}"
    elif wrong:
        blame = "both disagree with the golden: " + "; ".join(f"{path}: {verdict.message}" for path, verdict in wrong)
    else:
        blame = (f"both are within the {result.standard} standard of the golden"
                 + _nearer(golden, ((name, a), (other_name, b)), differing))
    at = f", the golden {_value(golden, index)}" if golden is not None else ""
    return (f"{name} and {other_name} results differ in {plural(differing.size, 'element')} of {a.size} (first at "
            f"{index}: {name} {_value(a, index)}, {other_name} {_value(b, index)}{at}); {blame}")


def disagreement(case: Case, inputs, first, other) -> str:
    """Why two paths' runs of ``case`` disagree, "" when they agree (module docstring, point 1). Each run is
    ``(path, result, outcome)``."""
    (name, result, outcome), (other_name, other_result, other_outcome) = first, other
    if result.status not in COMPARED or other_result.status not in COMPARED or outcome is None \
            or other_outcome is None or graph_reads_otherwise(case):
        return ""
    if outcome.status == 0 and other_outcome.status == 0:
        return _byte_difference(case, inputs, first, other)
    if outcome.status == 0 or other_outcome.status == 0:
        (refused_name, _, refused), (accepted_name, _, _) = (first, other) if outcome.status else (other, first)
        wrong = refused_name if case.expect.success else accepted_name
        return (f"{refused_name} refused the case ({describe(refused.status)}: {refused.error_message}) where "
                f"{accepted_name} accepted it; {_label(wrong)} disagrees with the case's expectation")
    kinds = refusal_kind(outcome.status), refusal_kind(other_outcome.status)
    if not kinds_agree(outcome.status, other_outcome.status):
        return (f"{name} and {other_name} refused the case for different reasons: {name} {describe(outcome.status)} "
                f"({kinds[0]}), {other_name} {describe(other_outcome.status)} ({kinds[1]})")
    return ""


def combine(case: Case, inputs, runs) -> CaseResult:
    """The one result of ``case`` run through several paths on the same ``inputs`` (module docstring). ``runs``:
    ``(path, result, outcome)`` per path, the first the reference the others are compared with."""
    problems = [problem for run in runs[1:] if (problem := disagreement(case, inputs, runs[0], run))]
    judged = [run for run in runs if run[1].status != "skipped"] or runs      # a path without the case: not counted
    worst = max(judged, key=lambda run: STATUSES[run[1].status].severity)[1]
    unwell = [(path, result) for path, result, _ in runs if not result.info.ok or result.status == "xfailed"]
    if problems:
        status, message = "failed", "; ".join(problems)
    elif len(unwell) == len(runs) and len({result.status for _, result in unwell}) == 1:
        status, message = worst.status, f"{' and '.join(path for path, _ in unwell)} agree: {worst.message}"
    else:
        status = worst.status
        message = "; ".join(f"{path}: {result.message}" for path, result in unwell if result.message)
    faults = [result.faults for _, result, _ in runs]
    return replace(worst, status=status, message=message, path=PATH,
                   paths={path: _line(result) for path, result, _ in runs},
                   details=[f"{path}: {_line(result)}" for path, result, _ in runs if result is not worst]
                   + list(worst.details),
                   warnings=[f"{path}: {warning}" for path, result, _ in runs for warning in result.warnings],
                   faults=None if any(found is None for found in faults)
                   else list(dict.fromkeys(name for found in faults for name in found)),
                   duration_s=max(result.duration_s for _, result, _ in runs))
