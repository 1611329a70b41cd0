"""Result records, their statuses, the run's description, exit codes, and safe display of file text and values
(``visible``, ``json_safe``).

One ``CaseResult`` per case is what every other part exchanges: workers send it to the parent, the
results file holds one per line (each record tagged with ``SCHEMA``, so that other processes and later
versions can read it), and every output format renders a list of them with the ``RunInfo`` of the run.

Statuses (``STATUSES``: status -> ``StatusInfo``):

- passed (ok): every check held;
- failed: a check did not hold;
- error: the case could not be judged (crash, timeout, runner failure, memory limit);
- skipped (ok): a pass case whose rotary mode the target does not implement;
- xfailed (ok): a ``known_defect`` case that failed as its marker says, or a case whose expectation holds for other
  builds than the toolkit's (``builds``) refused or accepted against it;
- xpassed: a ``known_defect`` case that passed: remove the marker;
- not_run: never started: the run stopped (``-x``, Ctrl-C, SIGTERM, SIGHUP) or its device wedged.
"""

from __future__ import annotations

import enum
import math
import re
import unicodedata
from array import array
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Sequence

from . import error_balance
from .vocab import DEFAULT_OP, DEFAULT_STANDARD, DEFAULT_SUPPORTED_MODES, UNNAMED_GENERATOR, decimal

SCHEMA = "prmg.result/3"
READABLE_SCHEMAS = ("prmg.result/2", SCHEMA)      # /2: before records named their run (``run_id``)
# A line of a file prmg wrote as JSON: its schema first (``record_schema``); those of a results file (reports.store).
_RECORD = re.compile(r'\s*\{\s*"schema"\s*:\s*"(prmg\.[a-z]+/[0-9]+)"')
RESULTS_SCHEMAS = ("prmg.run/", "prmg.result/")
# The longest time prmg takes as a limit (``--timeout``) or keeps in a record (a case's duration, its kernel and
# stage times): 10**9 s, about 32 years. A stored time beyond it (or negative, or not finite) is no time prmg took.
MAX_SECONDS = 10**9
MS_PER_SECOND = 1000


def is_time(value, per_second: int = 1) -> bool:
    """Whether ``value`` is a time prmg may take or keep: a number (not a bool), finite, from 0 to ``MAX_SECONDS``
    seconds, in units of which ``per_second`` make a second (``MS_PER_SECOND`` for milliseconds)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_SECONDS * per_second


@dataclass(frozen=True)
class StatusInfo:
    """How one status reads: a progress letter, the verdict word of tables, whether it is fine, how bad it is
    (``severity``: 0 is the best; reports list the worst first, a merge keeps the worst of a case's records),
    how much it says about what the kernel did (``evidence``), whether ``--resume`` keeps a record of it
    (``kept_on_resume``: not an error -- a timeout or crash may not recur -- nor a case that never ran), its
    colours in the HTML report (background, text), and its JUnit element (``junit``: ``failure``, ``error`` or
    ``skipped``; None for a pass) with the ``type`` it carries when the operator returned no status.

    ``evidence``: 2 a verdict on the kernel's result (passed, failed, error, xpassed); 1 a known defect seen
    again (xfailed: the kernel still fails as its marker says, which hides whatever else it now does); 0 none
    (skipped, not run). A case whose evidence drops has lost its verdict (``prmg compare`` counts it as a
    regression: a pass that became a skip or an xfail hides what the kernel now does), and a merge prefers a
    record with evidence to one without."""

    letter: str
    word: str
    ok: bool
    severity: int
    evidence: int
    kept_on_resume: bool
    colours: tuple[str, str]
    junit: str | None
    junit_type: str | None = None


STATUSES: dict[str, StatusInfo] = {
    "passed": StatusInfo(".", "PASS", True, 0, 2, True, ("#3b8f5a", "#ffffff"), None),
    "failed": StatusInfo("F", "FAIL", False, 5, 2, True, ("#c8313a", "#ffffff"), "failure", "failure"),
    "error": StatusInfo("E", "ERROR", False, 6, 2, False, ("#6a1b6e", "#ffffff"), "error", "error"),
    "skipped": StatusInfo("s", "SKIP", True, 1, 0, True, ("#cfd5db", "#1d1d1d"), "skipped"),
    "xfailed": StatusInfo("x", "XFAIL", True, 2, 1, True, ("#a9c8e0", "#1d1d1d"), "skipped"),
    "xpassed": StatusInfo("X", "XPASS", False, 4, 2, True, ("#ef8a17", "#1d1d1d"), "failure", "xpassed"),
    "not_run": StatusInfo("-", "NOT RUN", False, 3, 0, False, ("#59636e", "#ffffff"), "error", "not_run"),
}
WORST_FIRST = tuple(sorted(STATUSES, key=lambda status: -STATUSES[status].severity))
# The order of the summary line after "N passed, N failed", with each count's noun when not the status.
_SUMMARY_ORDER = (("error", ("error", "errors")), ("xfailed", None), ("xpassed", None), ("skipped", None),
                  ("not_run", ("not run", "not run")))


class ExitCode(enum.IntEnum):
    """The exit codes of every command (as pytest's ``ExitCode``, with prmg's own numbers)."""

    OK = 0                  # nothing failed
    FAILED = 1              # a case failed, errored, xpassed or did not run
    USAGE = 2               # a usage or case-file error: one line naming file, case and field
    INTERNAL = 3            # a bug in prmg: a traceback worth reporting
    NO_CASES = 5            # the selection holds no case, or every case was skipped (nothing was judged)
    INTERRUPTED = 130       # Ctrl-C (SIGINT); the partial report was printed
    TERMINATED = 143        # SIGTERM, handled like Ctrl-C
    HUNG_UP = 129           # SIGHUP (the terminal closed), handled like SIGTERM


def stopped_exit_code(signum: int) -> ExitCode:
    """The exit code of a command stop signal ``signum`` stopped (``errors.STOPS``): 128 + the signal's number, as a
    shell reports a process the signal killed."""
    return ExitCode(128 + int(signum))


@dataclass(slots=True)          # no __dict__ per record: a results file of 200,000 records is read in far less memory
class CaseResult:
    """The record of one case, as reports and the results file (JSON lines) hold it.

    ``status`` is a key of ``STATUSES``; ``error_code`` the status the operator returned (None when it
    was not called); ``warnings`` what makes a passing case weak (e.g. its golden equals its input);
    ``timings`` milliseconds per stage; ``definition`` the case as a case-file mapping with its ``generator``
    (``loader.case_record``; with ``source`` it reproduces the case: ``recorded_definition``); ``fingerprint``
    a hash of that definition and its input files;
    ``judged_under`` a hash of the run's settings that the verdict depends on (``store.settings_key``);
    ``faults`` the emulator faults that acted on its launches (``[]`` for none or no launch, None when not
    known: a toolkit without the emulator's hook, or a worker that crashed or timed out);
    ``path`` the call path that produced it (``aclnn``, ``geir`` for graph mode, ``aclnn+geir`` for both held against
    each other, "" in records older than graph mode: aclnn), and ``paths`` each path's verdict in a line when it
    ran through several.
    """

    name: str
    status: str
    message: str = ""
    error_code: int | None = None
    metrics: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    kernel_ms: float | None = None
    kernel_samples: list = field(default_factory=list)   # kernel ms of every launch of the case itself
    runner: str = ""                # "aclnn" or "emulator": what produced the timings
    duration_s: float = 0.0
    timings: dict = field(default_factory=dict)
    source: str = ""
    op: str = DEFAULT_OP
    dtype: str = ""
    cos_dtype: str = ""
    sin_dtype: str = ""
    shape: list = field(default_factory=list)
    cos_shape: list = field(default_factory=list)
    sin_shape: list = field(default_factory=list)
    rotary_mode: str = ""
    partial_slice: list = field(default_factory=list)
    seed: int | None = None
    generator: str = ""             # what drew the seeded inputs (vocab.GENERATORS; "" in older records: pcg64)
    expect: str = "pass"
    known_defect: str = ""
    standard: str = ""
    checks: list = field(default_factory=list)
    golden: bool = True
    tags: list = field(default_factory=list)
    key_metric: str = ""            # the judge's short summary of the metrics, e.g. "err/budget 0.41"
    error_map: dict = field(default_factory=dict)   # a failed slice's coarse error map (see judge)
    definition: dict = field(default_factory=dict)
    fingerprint: str = ""
    judged_under: str = ""          # the run's settings_key: --resume trusts the record only under the same
    artifacts: str = ""             # --save-failures: the folder holding this failed case's arrays
    run_id: str = ""                # the run that made the record (the results file's run record)
    faults: list | None = field(default_factory=list)   # emulator faults that acted on its launches
    path: str = ""                  # the call path(s): "aclnn", "geir", "aclnn+geir" ("": an older record, aclnn)
    paths: dict = field(default_factory=dict)           # path -> its verdict in a line (several paths)
    device: str = ""                # the device that ran it: its id, or a cluster's "IP/NPU<k>" ("": none, not known)
    device_statuses: dict = field(default_factory=dict)  # --each-device: each device that ran it -> its status there
    device_warnings: dict = field(default_factory=dict)  # --each-device: each device whose launches warned -> warnings

    def to_dict(self) -> dict:
        """The result as a new mapping of its fields (plain values, ready for JSON), tagged with ``SCHEMA``.

        The values are the fields' own (not copies, which took ``dataclasses.asdict`` a fifth of a small
        case's time in the worker): change the mapping's keys, never the lists and dicts it holds."""
        return {"schema": SCHEMA, **{name: getattr(self, name) for name in self.__dataclass_fields__}}


    @classmethod
    def from_dict(cls, data: dict) -> "CaseResult":
        """The CaseResult of a ``to_dict`` mapping; keys that are not fields are ignored."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def recorded_definition(self) -> dict:
        """``definition`` with the generator of its inputs named (the inputs' version): its own ``generator``
        key (every record prmg makes now), else the record's ``generator`` field (records whose definition left
        the default out), else ``UNNAMED_GENERATOR`` (records from before either: pcg64's inputs); {} for a
        record without a definition."""
        if not self.definition or "generator" in self.definition:
            return self.definition
        return {**self.definition, "generator": self.generator or UNNAMED_GENERATOR}

    @property
    def info(self) -> StatusInfo:
        """The ``StatusInfo`` of this result's status."""
        return STATUSES[self.status]


# What each field of a stored record must hold when read back (``store``): one kind per field of CaseResult.
RECORD_FIELDS = {
    "name": "name", "status": "status", "message": "text", "error_code": "int?", "metrics": "metrics",
    "details": "texts", "warnings": "texts", "kernel_ms": "ms?", "kernel_samples": "ms list", "runner": "text",
    "duration_s": "seconds", "timings": "timings", "source": "text", "op": "text", "dtype": "text",
    "cos_dtype": "text", "sin_dtype": "text", "shape": "dims", "cos_shape": "dims", "sin_shape": "dims",
    "rotary_mode": "text", "partial_slice": "slice", "seed": "seed?", "expect": "text", "known_defect": "text",
    "standard": "text", "checks": "texts", "golden": "bool", "tags": "texts", "key_metric": "text",
    "error_map": "error_map", "definition": "definition", "fingerprint": "text", "judged_under": "text",
    "artifacts": "text", "run_id": "text", "faults": "texts?", "generator": "text", "path": "text", "paths": "mapping",
    "device": "text", "device_statuses": "mapping", "device_warnings": "mapping",
}


@dataclass
class RunInfo:
    """What the run was: its runner and target, and where and when it ran (the reports' header)."""

    runner: str                 # "aclnn" | "emulator"
    location: str               # toolkit root (or emulator build folder), as named (ASCEND_HOME_PATH...)
    op_library: str = ""        # the library the operators were resolved from, as named
    supported_modes: tuple = tuple(sorted(DEFAULT_SUPPORTED_MODES))
    devices: tuple = (0,)
    standard: str = DEFAULT_STANDARD
    version: str = ""           # prmg's version
    soc: str = ""               # aclrtGetSocName()
    toolkit_version: str = ""   # as the toolkit's install files state it
    driver_version: str = ""
    host: str = ""
    started: str = ""           # ISO 8601 time the run started
    faults: tuple = ()          # emulator faults named for this run (PRMG_EMU_FAULT)
    strict: bool = False        # --strict: warnings fail their cases
    accepted_modes: tuple | None = None     # the modes the toolkit's first phase accepts (None: not asked)
    resumed: int = 0            # results taken from the --resume file instead of run again
    notes: tuple = ()           # more (label, text) header lines (prmg report: each shard's provenance)
    stopped_code: int | None = None     # the run's exit code when it was stopped (a stop signal), else None
    fault_shape: str = ""       # PRMG_EMU_FAULT_SHAPE: the only dy shape the faults act on ("" for any)
    checks: tuple = ()          # --check: golden-free checks run on every pass case
    golden: bool = True         # False under --no-golden: cases judged by their checks alone
    path: str = ""              # the call path(s) of --runner: aclnn, geir, aclnn+geir ("": an older run, aclnn)
    graph_library: str = ""     # graph mode's library and how it was made (toolkit.Toolkit.geir_build)
    opp: str = ""               # the opp folder the operators' kernels and tiling come from (toolkit.opp_path)
    opp_files: int = 0          # the operator's kernel and tiling files there (provenance.opp_stamp)
    opp_fingerprint: str = ""   # their stamp on this host (size, mtime, inode)
    opp_portable: str = ""      # their stamp as any host installing the same package has it (size, mtime)
    opp_kernels: tuple = ()     # where the operator's kernel binaries are, the first taken (provenance.kernel_places)
    mixed: tuple = ()           # prmg report: each setting that differs between the runs merged, unallowed
    warned: tuple = ()          # prmg report --strict: each warning of the merge about its shards (each fails it)
    each_device: bool = False   # --each-device: every case ran on every device of ``devices``
    visible_devices: str = ""   # ASCEND_RT_VISIBLE_DEVICES: the host's chips the runtime showed (its ids count them)
    preloaded: tuple = ()       # the libraries preloaded ahead of the toolkit, each with what it interposes (linkage)
    runner_asked: str = ""      # --runner as the run asked for it (auto, aclnn, emulator...; "": an older run's record)
    machine: str = ""           # this machine's host name, beside ``host`` (PRMG_HOST's label) (provenance.machine)
    boot_id: str = ""           # its kernel's boot id: one host label of two machines differs in it
    # ``location`` and ``op_library`` with links resolved (``.../latest`` -> ``.../8.0.RC2``): what the settings key
    # (``run_record.recorded_settings``); "" in a record of an older prmg, whose settings hold them as named
    location_resolved: str = ""
    op_library_resolved: str = ""

    def to_dict(self) -> dict:
        """The run's description as plain values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "RunInfo":
        """The RunInfo of a ``to_dict`` mapping (a run record's ``info``): its lists tuples again, keys that are not
        fields ignored, ``runner`` ``unrecorded`` and ``location`` "" when it has none."""
        known = {key: tuple(tuple(item) if isinstance(item, list) else item for item in value)
                 if isinstance(value, list) else value
                 for key, value in data.items() if key in cls.__dataclass_fields__}
        return cls(**{"runner": "unrecorded", "location": "", **known})

    @classmethod
    def joined(cls, infos: Sequence["RunInfo"]) -> "RunInfo":
        """One description of the runs ``infos`` (``prmg report``), field by field: a text their distinct non-empty
        values joined with ``; ``, a tuple their distinct items in order, a flag not its default when any run's is
        not (``--strict`` in one run, ``--no-golden`` in one run), anything else (counts, codes) its default."""
        values = {}
        for spec in fields(cls):
            seen = [getattr(info, spec.name) for info in infos]
            if spec.default is MISSING or isinstance(spec.default, str):
                values[spec.name] = "; ".join(dict.fromkeys(str(value) for value in seen if value))
            elif isinstance(spec.default, tuple):
                values[spec.name] = tuple(dict.fromkeys(item for value in seen for item in value or ()))
            elif isinstance(spec.default, bool):
                values[spec.name] = any(value != spec.default for value in seen) != spec.default
        return cls(**values)


_BLANKS = " \t\n\v\f\r"                   # what C's strtol skips before a number
_CHIP_ENTRY = re.compile(f"[{_BLANKS}]*([+-]?)([0-9]+)")


def read_visible(visible_devices) -> tuple[list[str], str]:
    """``ASCEND_RT_VISIBLE_DEVICES`` (a run record's ``visible_devices``) read as the runtime reads it: the host's
    chips it shows, in their order, and the text it never reads (blanks at the end aside). Each comma-separated entry
    is a decimal id (``strtol``: blanks and a sign before it); the list ends at an entry that is none, is negative or
    repeats one, and after an id followed by anything but a comma: ``0-3`` shows chip 0 alone (``-3`` unread), ``1 2``
    chip 1 (``2``). The runtime also ends it at an id past the host's chips, which the text cannot say."""
    text, chips = str(visible_devices or ""), []
    while text:
        match = _CHIP_ENTRY.match(text)
        chip = match[2].lstrip("0") or "0" if match else None
        if chip is None or (match[1] == "-" and chip != "0") or chip in chips:
            break
        chips.append(chip)
        text = text[match.end():]
        if not text.startswith(","):
            break
        text = text[1:]
    return chips, text.strip(_BLANKS)


def shown_chips(visible_devices) -> list[str]:
    """The host's chips ``ASCEND_RT_VISIBLE_DEVICES`` (a run record's ``visible_devices``) shows, in their order
    (``read_visible``: ``0-3`` is chip 0, not a chip named ``0-3``)."""
    return read_visible(visible_devices)[0]


def chip_ids(record: CaseResult) -> tuple:
    """The chips ``record`` holds a status of: the keys of its ``device_statuses`` (a run on each device:
    ``execute.combined``), else its ``device``, as written (none: a record of no device). The one reading of a record's
    chips: ``--resume`` (``store.trusted``) and a merge (``reports.chips``)."""
    return tuple(record.device_statuses) if record.device_statuses else (record.device,) if record.device else ()


def physical(device: str, shown: Sequence[str]) -> str:
    """The host's chip a run's ``device`` id is, ``shown`` the chips ``ASCEND_RT_VISIBLE_DEVICES`` showed it
    (``shown_chips``; none: the id is the host's). An id not in ASCII digits (``vocab.decimal``: ``²`` is a digit to
    ``str.isdigit``, not to ``int``) is no index: the id as it is."""
    index = decimal(device)
    return shown[index] if index is not None and index < len(shown) else device


def chip_ranges(labels: Sequence[str], sep: str = ", ", shortest: int = 3) -> str:
    """``labels`` (device ids, each perhaps led by its host: ``ci-7/3``) joined by ``sep``, each run of ``shortest``
    or more consecutive ids of one host as a range: ``0-2, 4, 5``, ``a/0-3, b/5``; an id not in ASCII digits as it is.
    ``--chips 0-4095`` of a merge with three chips' files named the 4093 others one by one in each case's message."""
    runs: list[list] = []                   # [its labels, the number of its last id, its host]
    for label in labels:
        host, _, chip = label.rpartition("/")
        number = decimal(chip)
        last = runs[-1] if runs else None
        if last and number is not None and last[1] is not None and last[2] == host and number == last[1] + 1:
            last[0].append(label)
            last[1] = number
        else:
            runs.append([[label], number, host])
    return sep.join(sep.join(run) if len(run) < max(shortest, 2) else f"{run[0]}-{run[-1].rpartition('/')[2]}"
                    for run, _, _ in runs)


def summary_counts(results: list[CaseResult]) -> dict:
    """How many results have each status (every key of ``STATUSES``), ``total`` and ``warnings`` (the
    results that carry a warning, and the run's own: ``run_warnings``)."""
    counts = {status: 0 for status in STATUSES}
    for result in results:
        if result.status not in counts:
            raise ValueError(f"case {visible(result.name)!r}: unknown status {visible(result.status)!r}")
        counts[result.status] += 1
    counts["total"] = len(results)
    counts["warnings"] = sum(1 for result in results if result.warnings) + len(run_warnings(results))
    return counts


def run_warnings(results: Sequence[CaseResult]) -> list[str]:
    """The warnings of the run as a whole, not of one case: the error balance of the small cases pooled
    (``error_balance.pooled``). ``--strict`` fails the run on any (``exit_code``)."""
    return error_balance.pooled(results)


class ScoreRows(tuple):
    """An error map's grid of scores as a results file is read: one ``array('d')`` a row, NaN where the score is None
    (JSON null; no stored score is NaN, the reader refuses NaN). 2,048 scores take 16 KB, not the 65 KB of float
    objects in lists: a file of failed cases with their maps is then read in about twice its size, as others are.
    Equal to the lists it holds; ``lists()`` gives them back (``json_safe``, ``store.encode``)."""

    __slots__ = ()
    __hash__ = None

    @classmethod
    def of(cls, rows) -> "ScoreRows":
        return cls(array("d", (math.nan if score is None else score for score in row)) for row in rows)

    def lists(self) -> list[list]:
        return [[None if score != score else score for score in row] for row in self]

    def __eq__(self, other) -> bool:
        return self.lists() == (other.lists() if isinstance(other, ScoreRows) else other)

    def __ne__(self, other) -> bool:
        return not self == other


def json_safe(value):
    """``value`` with only JSON-representable parts: numpy scalars and arrays become Python values,
    tuples become lists, and non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, ScoreRows):
        return json_safe(value.lists())
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):      # numpy scalar or array
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``1 case``, ``2 cases`` (``many`` when the plural is not ``singular + 's'``)."""
    return f"{count} {singular if count == 1 else many or singular + 's'}"


def summary_line(results: list[CaseResult]) -> str:
    """``N passed, N failed``, then the other counts that are non-zero (``1 error``, ``2 xfailed``,
    ``1 xpassed``, ``3 skipped``, ``4 not run``, ``1 warning``); a run of skips only says so."""
    counts = summary_counts(results)
    parts = [f"{counts['passed']} passed", f"{counts['failed']} failed"]
    for status, nouns in _SUMMARY_ORDER:
        if counts[status]:
            parts.append(plural(counts[status], *nouns) if nouns else f"{counts[status]} {status}")
    if counts["warnings"]:
        parts.append(plural(counts["warnings"], "warning"))
    line = ", ".join(parts)
    if counts["total"] and counts["skipped"] == counts["total"]:
        line += " (every case was skipped)"
    return line


def report_exit_code(results: list[CaseResult], info: RunInfo) -> ExitCode:
    """The exit code a report of ``results`` states: the run's when it was stopped (``info.stopped_code``), ``FAILED``
    when it merges runs judged under settings that differ (``info.mixed``: no one verdict) or warns of its shards
    under ``--strict`` (``info.warned``), else ``exit_code``."""
    if info.stopped_code is not None:
        return ExitCode(info.stopped_code)
    code = exit_code(results, info.strict)
    return ExitCode.FAILED if (info.mixed or info.warned) and code in (ExitCode.OK, ExitCode.NO_CASES) else code


def exit_code(results: list[CaseResult], strict: bool = False) -> ExitCode:
    """``FAILED`` when any result is not ok (failed, error, xpassed, not_run), or under ``--strict`` when the run
    has a warning of its own (``run_warnings``); when every one was skipped, nothing was judged: ``NO_CASES``
    (``FAILED`` under ``--strict``); else ``OK``."""
    if any(not result.info.ok for result in results) or (strict and run_warnings(results)):
        return ExitCode.FAILED
    if results and all(result.status == "skipped" for result in results):
        return ExitCode.FAILED if strict else ExitCode.NO_CASES
    return ExitCode.OK


# Characters shown escaped: controls (C0, DEL, C1), format characters such as bidi overrides,
# surrogates, private use, unassigned code points (U+FFFE ...) and line/paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    """One hidden character as ``\\n``, ``\\x1b``, ``\\u202e`` or ``\\U000e0001``."""
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _hidden(char: str) -> bool:
    """Whether ``visible`` writes ``char`` as an escape."""
    return char in _NAMED_ESCAPES or unicodedata.category(char) in _HIDDEN_CATEGORIES


def visible(text, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that could change what a terminal or a reader shows (controls,
    escape sequences, newlines, bidi overrides, surrogates, unassigned code points) written as a
    visible escape (``\\x1b``, ``\\n``, ``\\u202e``), so nothing read from a file can clear a screen, forge
    a line or hide text; the rest as it is, a backslash included (a Windows path, a value as the user typed it:
    ``C:\\fp16``, not ``C:\\\\fp16``). Its output has no such character, so ``visible`` of it is itself: a value
    escaped once (``fields.show``) in a message escaped again as a whole reads the same. ``keep_newlines`` leaves
    ``\\n`` as it is (for multi-line blocks whose lines are all prmg's)."""
    text = str(text)
    if text.isprintable():                       # no character of a hidden category (all are Other or Separator)
        return text
    return "".join(_escape(char) if _hidden(char) and not (char == "\n" and keep_newlines) else char for char in text)


def visible_html(text) -> str:
    """``visible(text)`` with markup escaped (quotes too), for an HTML page: nothing read from a file can add
    markup to it."""
    import html                                  # here: only the HTML pages need it

    return html.escape(visible(text), quote=True)


def record_schema(text: str) -> str | None:
    """The schema of the JSON record ``text`` starts with when prmg wrote it (``prmg.result/3``), else None."""
    match = _RECORD.match(text)
    return match[1] if match else None
