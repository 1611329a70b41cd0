"""Cell and header text shared by every output format: dtypes, shapes, slices, times, verdicts, header.

Every piece of text that may come from a file (names, messages, details, paths) goes through
``results.visible`` here or in the format's own writer, so no output can carry a control character.
"""

from __future__ import annotations

import math

from ... import __version__, dtypes
from ...case import Case, element_count
from ...judging.verdict_metrics import key_metric
from ...ops import OPERATORS
from ...results import STATUSES, CaseResult, RunInfo, plural, visible
from ...vocab import mode_list, mode_name
from .screen import width as screen_width, wrap

EMULATOR_NOTE = "results come from the host emulator, not an NPU"
TESTS_PRMG = "this run tests prmg, not the operator"
MAX_CASES_NAMED = 5             # cases a fault line names before "and N more"
NO_KERNEL_FILES = "no file of the operator's kernels or tiling"      # an opp folder holding none (the emulator's)

__all__ = ["EMULATOR_NOTE", "dtype_label", "shape_label", "slice_label", "ms_label", "metric_label",
           "verdict_word", "runner_label", "checks_ran", "checks_field", "header_fields", "format_header",
           "fault_cases", "fault_field", "fault_lines", "diagnosis_lines", "mode_name", "modes_note",
           "failures_by_device", "device_line", "device_lines"]


def short_dtype(name: str) -> str:
    """The table label of a dtype (``float16`` -> ``fp16``); unknown names are shown as they are."""
    try:
        return dtypes.lookup(name).short
    except KeyError:
        return visible(name)


def dtype_label(dy: str, cos: str = "", sin: str = "") -> str:
    """dy's dtype, then cos's (and sin's) only where they differ: ``fp16``, ``fp16/fp32``,
    ``fp16/fp32/bf16``. An empty name means "the same as the one before"."""
    dy_label = short_dtype(dy) if dy else "-"
    cos_label = short_dtype(cos) if cos else dy_label
    sin_label = short_dtype(sin) if sin else cos_label
    if sin_label != cos_label:
        return f"{dy_label}/{cos_label}/{sin_label}"
    if cos_label != dy_label:
        return f"{dy_label}/{cos_label}"
    return dy_label


def shape_label(shape) -> str:
    """A shape as ``2x4x8x128`` (``-`` when unknown or a scalar)."""
    if not shape:
        return "-"
    return "x".join(str(extent) for extent in shape)


def slice_label(partial_slice) -> str:
    """The partial slice as the half-open interval ``[start, end)``."""
    if not partial_slice or len(partial_slice) != 2:
        return "-"
    return f"[{partial_slice[0]}, {partial_slice[1]})"


def ms_label(ms: float | None) -> str:
    """A time in milliseconds for a table cell: ``0.012 ms``, or ``-`` when not measured."""
    if ms is None or not math.isfinite(ms):
        return "-"
    return f"{ms:.3f} ms" if ms >= 0.001 or ms == 0 else f"{ms:.1e} ms"


def _number(value) -> str:
    """A metric value for display: floats with 3 significant digits, anything else as written."""
    value = value.item() if hasattr(value, "item") else value     # numpy scalars
    return f"{value:.3g}" if isinstance(value, float) else visible(value)


# What a metric's text may raise on metrics a file holds but no judge of today wrote (a value of another type, a
# metric without its partners): such a record is shown by its raw metrics.
_UNREADABLE_METRICS = (TypeError, ValueError, KeyError, OverflowError, ZeroDivisionError)


def metric_label(result: CaseResult) -> str:
    """The key metric(s) of a result: the judge's ``key_metric`` when it gave one, else today's text of its metrics
    (``verdict_metrics.key_metric``: a result with no element off the golden was written with none before session
    12, and showed the raw ``max_err_ratio=0 bad=0``; today ``err 0 ulp, exact``; the record itself is left as
    written), else the first two metrics as ``name=value`` with 3 significant digits; for a passed call that
    computes nothing (an empty slice or tensor: no metric, only the in-place tensor left bit for bit as it was)
    ``no-op: dy left unchanged``, where a table showed a bare ``-``."""
    if result.key_metric:
        return visible(result.key_metric)
    try:
        today = key_metric(result.metrics)
    except _UNREADABLE_METRICS:
        today = ""
    if today:
        return visible(today)
    shown = list(result.metrics.items())[:2]
    if not shown and result.status == "passed" and result.expect == "pass" and result.op in OPERATORS and (
            len(set(result.partial_slice)) == 1 or 0 in result.shape or 0 in result.cos_shape):
        return f"no-op: {OPERATORS[result.op].tensor} left unchanged"
    return " ".join(f"{visible(k)}={_number(v)}" for k, v in shown) or "-"


def verdict_word(result: CaseResult) -> str:
    """The verdict word of a result's status (``PASS``, ``XFAIL``, ...), else the status in capitals."""
    info = STATUSES.get(result.status)
    return info.word if info else visible(result.status).upper()


# How a run called the operator when not through aclnn alone (``RunInfo.path``).
CALLS = {"geir": "graph mode (GE IR)", "aclnn+geir": "aclnn and graph mode (GE IR) on the same inputs, compared "
                                                   "byte for byte"}


def runner_label(info: RunInfo) -> str:
    """What ran the cases: the emulator and its build folder, or the toolkit and the operator library; then how
    the operator was called when not through aclnn alone, and graph mode's library."""
    if info.runner == "emulator":
        label = f"emulator (host build at {visible(info.location)}); {EMULATOR_NOTE}"
    else:
        label = f"{visible(info.runner)} toolkit at {visible(info.location)}"
        if info.op_library:
            label += f"; operator from {visible(info.op_library)}"
    if info.path not in ("", "aclnn"):
        label += f"; called through {CALLS.get(info.path, visible(info.path))}"
        if info.graph_library:
            label += f", graph mode by {visible(info.graph_library)}"
    return label


def fault_cases(results: list[CaseResult]) -> dict[str, list[str]]:
    """Each emulator fault that acted on some result -> the names of those results (``CaseResult.faults``)."""
    cases: dict[str, list[str]] = {}
    for result in results:
        for fault in result.faults or ():
            cases.setdefault(fault, []).append(result.name)
    return cases


def first_names(names: list[str], count: int = MAX_CASES_NAMED) -> str:
    """The first ``count`` of ``names`` (made visible), then ``and N more``."""
    return ", ".join(map(visible, names[:count])) + (f" and {len(names) - count} more" if len(names) > count else "")


def _names(results: list[CaseResult]) -> str:
    """The first ``MAX_CASES_NAMED`` names of ``results``, then ``and N more``."""
    return first_names([result.name for result in results])


def fault_field(info: RunInfo, results: list[CaseResult] | None = None) -> tuple[str, str] | None:
    """The (label, value) line about the emulator faults the run named (``PRMG_EMU_FAULT``), None without any.

    Before the run (``results`` None) only the names are known: ``FAULTS NAMED``. After it, each result says
    which faults acted on its launches (``CaseResult.faults``): ``FAULTS INJECTED`` names the faults that
    acted and the cases they acted on; ``FAULTS NAMED BUT NEVER INJECTED`` says why none acted (the shape of
    ``PRMG_EMU_FAULT_SHAPE`` matched no case, or no kernel ran with them); a case that crashed or timed out
    could not say, which the line counts (``FAULTS NAMED, NOT SEEN ACTING`` when no other case saw them).
    """
    if not info.faults:
        return None
    named = ", ".join(visible(fault) for fault in info.faults)
    where = f"PRMG_EMU_FAULT_SHAPE={visible(info.fault_shape)}" if info.fault_shape else "PRMG_EMU_FAULT"
    if results is None:
        return "FAULTS NAMED", f"{named} ({where}): {TESTS_PRMG}; the end of the report says which cases they acted on"
    acted = fault_cases(results)
    hit = [result for result in results if result.faults]
    unknown = [result for result in results if result.faults is None]
    untold = (f"; {plural(len(unknown), 'case')} ended without reporting them (a crash or timeout): "
              f"{_names(unknown)}") if unknown else ""
    if hit:
        idle = [visible(fault) for fault in info.faults if fault not in acted]
        never = f"; never injected: {', '.join(idle)}" if idle else ""
        return "FAULTS INJECTED", (f"{', '.join(visible(fault) for fault in acted)} ({where}: acted on {len(hit)} of "
                                   f"{plural(len(results), 'case')}: {_names(hit)}{never}{untold}): {TESTS_PRMG}")
    if unknown:
        return "FAULTS NAMED, NOT SEEN ACTING", f"{named} ({where}: no case reported them acting{untold}): {TESTS_PRMG}"
    shapes = {",".join(map(str, result.shape)) for result in results}
    why = f"{where} matched no case" if info.fault_shape and info.fault_shape not in shapes \
        else f"{where}: no kernel ran with them"
    return "FAULTS NAMED BUT NEVER INJECTED", f"{named} ({why})"


def fault_lines(info: RunInfo, results: list[CaseResult]) -> list[str]:
    """``LABEL: value`` of ``fault_field`` after the run, for the end of a report whose header went out
    before the first case (and so could only name the faults); [] when the run named none."""
    field = fault_field(info, results)
    return [f"{field[0]}: {field[1]}"] if field else []


def checks_ran(judged) -> tuple[list[str], int, int]:
    """(the checks the case files ask for, ``checks:``, in order of first use; how many of ``judged`` ask for
    some; how many are judged without the golden, ``golden: false``) of ``judged``: the run's cases or
    their results (both have ``checks`` and ``golden``), None when not known."""
    own = [item for item in judged or () if item.checks]
    return list(dict.fromkeys(name for item in own for name in item.checks)), len(own), \
        sum(1 for item in judged or () if not item.golden)


def checks_field(info: RunInfo, judged=None) -> tuple[str, str] | None:
    """The ("checks", value) line naming the golden-free checks the run added to every pass case (``--check``)
    and, when ``judged`` (the cases, or their results) are given, those the case files asked for (``checks:``)
    with how many cases did, and what was judged without the golden (``--no-golden``, ``golden: false``); None
    when there was none of it (``checks_ran``)."""
    names, asking, goldless = checks_ran(judged)
    parts = [f"{', '.join(map(visible, info.checks))} on every pass case (--check)"] if info.checks else []
    if asking:
        parts.append(f"{', '.join(map(visible, names))} on {plural(asking, 'case')} (their checks:)")
    if not info.golden:
        parts.append("no golden (--no-golden): pass cases judged by their checks alone")
    elif goldless:
        parts.append(f"{plural(goldless, 'case')} judged without the golden (golden: false)")
    return ("checks", "; ".join(parts)) if parts else None


def kernels_text(places) -> str:
    """Where the operator's kernels come from (``provenance.kernel_places``): ``kernels from built-in``, or ``kernels
    from vendors/customize, before built-in`` when several places hold them (the first is taken)."""
    first, *rest = map(visible, places)
    return f"kernels from {first}" + (f", before {', '.join(rest)}" if rest else "")


def mixed_field(info: RunInfo) -> tuple[str, str]:
    """The header line of a merge of runs judged under settings that differ (``RunInfo.mixed``, ``merge.run_info``)."""
    return ("MIXED SETTINGS", f"{'; '.join(map(visible, info.mixed))}: the runs merged were judged under settings that "
                              f"differ, so no one verdict covers them (exit 1; --allow-mixed SETTING if that is "
                              f"intended)")


def warned_field(info: RunInfo) -> tuple[str, str]:
    """The header line of a merge under ``prmg report --strict`` that warns of its shards (``RunInfo.warned``)."""
    return ("STRICT", f"{'; '.join(map(visible, info.warned))}: --strict fails a merge on each warning of its shards "
                      f"(exit 1)")


def merge_fields(info: RunInfo) -> list[tuple[str, str]]:
    """The header lines of what besides the cases makes a merged report exit 1 (``results.report_exit_code``): the
    settings it mixes (``mixed_field``), the warnings of its shards under ``--strict`` (``warned_field``)."""
    return [field(info) for field, on in ((mixed_field, info.mixed), (warned_field, info.warned)) if on]


def exit_note(info: RunInfo) -> str:
    """``merge_fields`` for a summary line: ``exit 1: MIXED SETTINGS, STRICT`` (their labels), or ``''``."""
    labels = [label for label, _ in merge_fields(info)]
    return f"exit 1: {', '.join(labels)}" if labels else ""


def header_fields(info: RunInfo, results: list[CaseResult] | None = None, judged=None) -> list[tuple[str, str]]:
    """The (label, value) lines above a report: runner, the settings a merge mixes (``RunInfo.mixed``), the warnings
    of its shards ``--strict`` fails it on (``warned_field``), the emulator
    faults (``fault_field``: what acted where, when ``results`` are given), target, devices, standard, the
    golden-free checks (``checks_field`` of ``judged``, by default ``results``: a header printed before the first
    case gives the cases), then where and when it ran (SoC, toolkit and driver versions, host, start), the opp folder
    with the fingerprint of the operator's kernel and tiling files there, the libraries preloaded ahead of the
    toolkit, the results ``--resume`` took, and prmg's version."""
    fields = [("runner", runner_label(info))] + merge_fields(info)
    faults = fault_field(info, results)
    if faults:
        fields.append(faults)
    fields += [("target", f"rotary modes {mode_list(info.supported_modes)}" + modes_note(info)),
               ("device" if len(info.devices) == 1 else "devices",      # "devices: 0" reads as none
                (", ".join(visible(str(device)) for device in info.devices) or "-")
                + (f" of the chips ASCEND_RT_VISIBLE_DEVICES={visible(info.visible_devices)} shows"
                   if info.visible_devices else "")
                + (" (--each-device: every case on each)" if info.each_device and len(info.devices) > 1 else "")),
               ("standard", visible(info.standard) + (" (--strict: warnings fail)" if info.strict else ""))]
    checks = checks_field(info, results if judged is None else judged)
    if checks:
        fields.append(checks)
    for label, value in (("soc", info.soc), ("toolkit", info.toolkit_version), ("driver", info.driver_version),
                         ("host", host_text(info)), ("started", info.started)):
        if value:
            fields.append((label, visible(value)))
    if info.opp:
        stamped = (f"{plural(info.opp_files, 'file')} of the operator's kernels and tiling, fingerprint "
                   f"{visible(info.opp_fingerprint) or '?'}") if info.opp_files else \
            NO_KERNEL_FILES
        stamped += f"; {kernels_text(info.opp_kernels)}" if info.opp_kernels else ""
        fields.append(("opp", f"{visible(info.opp)} ({stamped})"))
    if info.preloaded:
        fields.append(("preloaded", "; ".join(map(visible, info.preloaded))))
    if info.resumed:
        fields.append(("resumed", f"{plural(info.resumed, 'result')} taken from the --resume file, not run again"))
    fields += [(visible(label), visible(text)) for label, text in info.notes]
    fields.append(("prmg version", info.version or __version__))      # not "prmg: 0.1.0", read as a message
    return fields


def host_text(info: RunInfo) -> str:
    """The host a run recorded (``PRMG_HOST``'s label, or the host name), with the machine's host name beside a label
    that is not it: ``ci-1 (machine 3f2a9c)``."""
    return info.host + (f" (machine {info.machine})" if info.machine and info.host and info.machine != info.host
                        else "")


def modes_note(info: RunInfo) -> str:
    """``; the toolkit accepts half, ... too: ...`` when the modes the toolkit's first phase accepts differ from
    the target's (``--supported-modes``), else ""."""
    if info.accepted_modes is None:
        return ""
    accepted, target = set(info.accepted_modes), set(info.supported_modes)
    notes = []
    if accepted - target:
        both = ",".join(map(str, sorted(accepted | target)))
        notes.append(f"the toolkit accepts {mode_list(accepted - target)} too: their pass cases run, since its first "
                     f"phase says it implements them (--supported-modes {both} says so as well)")
    if target - accepted:
        notes.append(f"the toolkit refuses {mode_list(target - accepted)}: their pass cases will fail")
    return "".join(f"; {note}" for note in notes)


def format_header(info: RunInfo, results: list[CaseResult] | None = None, width: int | None = None,
                  judged=None) -> str:
    """The lines above a report (``header_fields``), each wrapped to ``width`` columns (default
    ``screen.width()``): an emulator run says plainly that its results do not come from an NPU, and the faults
    it named are said (where they acted, when ``results`` are given)."""
    width = width or screen_width()
    return "\n".join(line for name, value in header_fields(info, results, judged)
                     for line in wrap(f"{name}: {value}", width))


# A device "concentrates" a run's failures when so many of them landing there by chance has a probability below
# CHANCE (the Chernoff bound of ``device_line``, over every device); no fewer than MIN_FAILURES are ever read so.
CHANCE = 1e-3
MIN_FAILURES = 2


def failures_by_device(results: list[CaseResult]) -> dict[str, dict[str, int]]:
    """Each device that ran a case (``CaseResult.device``, or each of its ``device_statuses`` under ``--each-device``)
    -> ``{"cases": ..., "failures": ...}`` (failures: failed, errored or xpassed), in order of the device labels."""
    counts: dict[str, dict[str, int]] = {}
    for result in results:
        for device, status in (result.device_statuses or {result.device: result.status}).items():
            if device:
                entry = counts.setdefault(device, {"cases": 0, "failures": 0})
                entry["cases"] += 1
                entry["failures"] += status in ("failed", "error", "xpassed")
    return dict(sorted(counts.items(), key=lambda item: (len(item[0]), item[0])))


def _chance(failures: int, total: int, share: float) -> float:
    """An upper bound on the chance that ``failures`` or more of ``total`` failures land on a device that ran ``share``
    of the cases, each failure independently: ``exp(-total * KL(failures/total || share))`` (Chernoff), 1 when
    ``failures/total <= share``; ``KL(q || p) = q ln(q/p) + (1-q) ln((1-q)/(1-p))``."""
    q = failures / total
    if q <= share:
        return 1.0
    divergence = q * math.log(q / share) + ((1 - q) * math.log((1 - q) / (1 - share)) if q < 1 else 0.0)
    return math.exp(-total * divergence)


def device_line(results: list[CaseResult]) -> str:
    """``17 failures, all on device 1 of 2: suspect the chip`` (or ``15 of 17 failures on device 1 of 2, which ran 17
    of 34 cases``) for each device of a run of several on which the failures concentrate: at least ``MIN_FAILURES``
    of them there, and the chance of that many there by luck (``_chance``, times the number of devices) below
    ``CHANCE``; "" when none does (one device, or failures spread as the cases are)."""
    counts = failures_by_device(results)
    total = sum(entry["failures"] for entry in counts.values())
    cases = sum(entry["cases"] for entry in counts.values())
    if len(counts) < 2 or total < MIN_FAILURES:
        return ""
    parts = []
    for device, entry in counts.items():
        here = entry["failures"]
        if here >= MIN_FAILURES and len(counts) * _chance(here, total, entry["cases"] / cases) < CHANCE:
            where = f"device {visible(device)} of {len(counts)}"
            parts.append(f"{total} failures, all on {where}" if here == total else
                         f"{here} of {total} failures on {where}, which ran {entry['cases']} of {cases} cases")
    return "; ".join(parts) + ": suspect the chip" if parts else ""


def device_lines(results: list[CaseResult]) -> list[str]:
    """``failures by device: ...`` (``device_line``) as the one line the end of a report gets, [] when none."""
    line = device_line(results)
    return [f"failures by device: {line}"] if line else []


def diagnosis_lines(result: CaseResult, indent: str = "    ", details: bool = True) -> list[str]:
    """The lines explaining one result: ``FAIL name: message``, its warnings, where ``--save-failures`` saved its
    arrays (or why it could not), then (``details``) its diagnosis lines that do not repeat the message, indented."""
    lines = [f"{verdict_word(result)} {visible(result.name)}: {visible(result.message)}".rstrip()]
    lines += [f"{indent}warning: {visible(warning)}" for warning in result.warnings]
    lines += [f"{indent}--save-failures: {visible(result.artifacts)}"] if result.artifacts else []
    if details:
        lines += [indent + visible(detail) for detail in result.details if str(detail) not in result.message]
    return lines


def bytes_moved(case: Case) -> int:
    """The bytes one launch moves (the memory traffic the kernel cannot avoid: the dy slice read and written, cos and
    sin read once per distinct row; ``prmg bench`` divides it by the median time, the HTML page plots kernel time
    against it): ``2*rows*L*itemsize(dy) + 2*numel(cos)*itemsize(cos)`` for one launch of ``case`` (a ``Case``, or a
    ``CaseResult``, which names the same fields; cos's dtype is dy's when a record leaves it out)."""
    start, end = case.partial_slice
    rows = element_count(case.shape[:-1])
    cos_items = element_count(case.cos_shape)
    return (2 * rows * (end - start) * dtypes.lookup(case.dtype).numpy.itemsize
            + 2 * cos_items * dtypes.lookup(case.cos_dtype or case.dtype).numpy.itemsize)
