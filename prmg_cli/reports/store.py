"""The results store: one JSON-lines file a run appends to (``--results``), read back by ``--resume``,
``prmg report`` and ``prmg compare`` through the one reader here.

**What a file holds.** Two kinds of lines, each one JSON object tagged with its ``schema``:

- a *run record* (``RUN_SCHEMA``), written when a run starts, before its first result: the run's id, its
  shard (``I/N``), the names of the cases it was asked to run *before* sharding (so that a merge can tell
  which cases a missing shard or a killed run never reported) and, sharded, the first name of each case's tiling
  siblings, which its shard goes by (``together``), the settings its verdicts depend on
  (``settings``; their hash is every result's ``judged_under``) and its provenance (``results.RunInfo``:
  runner, toolkit, SoC, host, start, injected faults);
- a *result record* (``results.SCHEMA``, ``CaseResult.to_dict``) per finished case, naming its run
  (``run_id``). ``--resume`` appends a new run record and the results it runs again: within a file the last
  record of a case is the newest.

**Writing** (``Writer``). The file is opened when the writer is made, so a path that cannot be written is
a usage error before anything runs. Each line is written whole with one ``write`` call and synced to disk
(for a regular file), so a crash tears at most the line being written; when an existing file does not end
in a newline (its last line was torn), a newline is written first, so the torn line stays alone on its
line and no finished record is lost. ``/dev/null`` and a pipe with a reader work; a FIFO without a reader,
a directory, or a failed write (``/dev/full``, a full disk) is one PrmgError naming the path.

**Reading** (``read``). Only a regular file of at most ``MAX_FILE_BYTES`` is read (a FIFO, ``/dev/zero``, a
directory or a larger file is refused at once), line by line, no line longer than ``MAX_LINE_BYTES``, runs of
blank lines skipped at the speed of their bytes (``_lines``), so no file can hang prmg or fill its memory.
Every field of every record is checked, type and value, against ``results.RECORD_FIELDS`` / ``RUN_FIELDS`` (nesting
depth, integers within int64 and uint64, text that is valid Unicode, error maps shaped as ``diagnosis.error_map``
makes them, shapes, slices and seeds held to the case format's own rules (``fields.parse_dims``, ``parse_slice``,
``parse_seed``), times finite and within ``results.is_time``), so that nothing read can crash a report, compare or
resume later. A *torn* line -- a strict prefix of a line this prmg's encoder writes, cut by a crash (``_torn``: its
schema, its fields in the encoder's order and spacing, each whole value of its kind, the last one cut short) -- is
left out wherever it is (``--resume`` after a crash leaves one in the middle). Any other line (garbage, another
JSON, another schema, a wrong field) is one PrmgError naming the file, the line and what is wrong.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from ..cases.fields import Where, parse_dims, parse_seed, parse_slice, show
from ..errors import PrmgError
from ..judging.diagnosis import MAP_COLUMNS, MAP_ROWS
from ..results import (MAX_SECONDS, MS_PER_SECOND, READABLE_SCHEMAS, RECORD_FIELDS, SCHEMA, STATUSES, CaseResult,
                       RunInfo, ScoreRows, chip_ids, is_time, physical, shown_chips, visible)
from ..vocab import MAX_RUN_CASES, shard_numbers
from .consistency import contradiction

RUN_SCHEMA = "prmg.run/1"
MAX_LINE_BYTES = 64 * files.MiB        # a run record lists up to MAX_RUN_CASES (200,000) case names
MAX_DEPTH = 32                         # nesting of any stored JSON value
# The largest results file read: 200,000 cases of ~1.5 KB a record (a failed one with its error map: ~6 KB)
# with room for resumes. Reading one takes about twice its size in memory (``_shared``, and only the newest record
# of each case is kept); a file that needs far more (many tiny records) is bounded by the counts below.
MAX_FILE_BYTES = 512 * files.MiB
MAX_FILE_CASES = 2 * MAX_RUN_CASES     # cases one results file may hold results of (a run holds MAX_RUN_CASES)
MAX_FILE_SELECTED = 10 * MAX_RUN_CASES  # case names its run records (one a run or resume) may list together
# A report lists each case its run records select (those no record reports not_run, ~5 KB each in a JSON report):
# the distinct names they select are bounded as the cases a file holds results of are.
_TORN = object()                       # what _parse makes of a torn line
_APPEND_FLAGS = (os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))


# What each field of a run record must hold (``RunRecord``), and of its ``info`` (``results.RunInfo``).
RUN_FIELDS = {"run_id": "name", "shard": "shard", "selection": "selection", "settings": "mapping",
              "info": "run_info", "together": "together"}
RUN_OPTIONAL = {"together"}            # the kinds of the fields a run record of an earlier prmg lacks
# What a run record states both in its settings (which its verdicts' ``judged_under`` holds the key of) and in its
# provenance (``info``, which headers and JUnit properties show): the run wrote them alike
# (``run_record.recorded_settings``)
STATED_TWICE = ("runner", "location", "op_library", "toolkit_version", "soc", "driver_version", "host", "strict",
                "version", "preloaded")
# Of those, what the info states under another name, when it does: the settings hold the toolkit's folder and library
# with links resolved, the info also as named (its header's); a record of an older prmg states them as named in both
STATED_RESOLVED = {"location": "location_resolved", "op_library": "op_library_resolved"}
RUN_INFO_FIELDS = {
    "runner": "text", "location": "text", "op_library": "text", "supported_modes": "ints", "devices": "devices",
    "standard": "text", "version": "text", "soc": "text", "toolkit_version": "text", "driver_version": "text",
    "host": "text", "started": "text", "faults": "texts", "strict": "bool", "accepted_modes": "ints?",
    "resumed": "int", "notes": "notes", "stopped_code": "int?", "fault_shape": "text", "checks": "texts",
    "golden": "bool", "path": "text", "graph_library": "text", "opp": "text", "opp_files": "int",
    "opp_fingerprint": "text", "opp_portable": "text", "mixed": "texts", "warned": "texts", "each_device": "bool",
    "opp_kernels": "texts", "visible_devices": "text", "preloaded": "texts", "location_resolved": "text",
    "op_library_resolved": "text", "runner_asked": "text",
}


@dataclass
class RunRecord:
    """A run as its results file states it (module docstring): written before the run's first result."""

    run_id: str
    shard: str                      # "I/N", or "" for a run of every selected case
    selection: list                 # the names of the cases selected before sharding, in case order
    settings: dict                  # what the verdicts depend on; sha256 of its JSON: results' judged_under
    info: dict                      # results.RunInfo of the run, as plain values
    # a sharded run's shard names of the selection's tiling siblings (``execute.together``: case -> the first name of
    # its siblings, which its shard goes by); {} unsharded, and in a record of a run that sharded by name alone
    together: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"schema": RUN_SCHEMA, "run_id": self.run_id, "shard": self.shard, "selection": list(self.selection),
                "settings": self.settings, "info": self.info, "together": self.together}

    @property
    def run_info(self) -> RunInfo:
        """The run's ``RunInfo`` (``RunInfo.from_dict``)."""
        return RunInfo.from_dict(self.info)


# The fields of a result that state its case (``execute.case_result``), which a not_run in its place keeps.
CASE_FIELDS = ("source", "op", "dtype", "cos_dtype", "sin_dtype", "shape", "cos_shape", "sin_shape", "rotary_mode",
               "partial_slice", "seed", "generator", "expect", "known_defect", "standard", "checks", "golden", "tags",
               "definition", "fingerprint")


def settings_key(settings: dict) -> str:
    """The sha256 of ``settings``' canonical JSON: the ``judged_under`` of every result judged under them."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Stored:
    """What one results file holds: its result records (``read`` keeps the newest of each case on each chip, in the
    order of the newest of each case: what ``latest`` gives; ``chips.Chips.current`` reads the others), its run
    records in file order, how many result records it held (``records``, superseded ones included) and how many torn
    lines were left out."""

    path: str
    results: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    torn: int = 0
    records: int = 0
    replaced: int = 0               # records ``current`` last reported not_run in place of an earlier run's

    def latest(self) -> dict[str, CaseResult]:
        """The last result recorded per case name (a file is appended to: the last is the newest), in the
        order of those last records."""
        newest: dict[str, CaseResult] = {}
        for result in self.results:
            newest.pop(result.name, None)
            newest[result.name] = result
        return newest

    def current(self) -> dict[str, CaseResult]:
        """``latest``, but a ``not_run`` in place of each record that a later run of the file was to replace and did
        not: the last run record whose selection holds the case (in its shard) is another run's, which recorded no
        result of it (killed before it got there), and the record was judged under other settings than that run's
        (``judged_under``: a resume would not have kept it). An earlier run's verdict, of another kernel, toolkit or
        standard, is no verdict of the file's last run."""
        from ..device.execute import parse_shard, shard_of

        newest, last = self.latest(), {}
        for run in self.runs:                               # file order: the last run selecting a case wins
            index, count = parse_shard(run.shard) if run.shard else (0, 0)
            for name in run.selection:
                if name in newest and (not count or shard_of(run.together.get(name, name), count) == index):
                    last[name] = run
        keys, self.replaced = {run.run_id: settings_key(run.settings) for run in self.runs}, 0
        for name, run in last.items():
            record = newest[name]
            if record.run_id != run.run_id and record.judged_under != keys[run.run_id]:
                self.replaced += 1
                newest[name] = CaseResult(name=name, status="not_run", run_id=run.run_id, message=(
                    f"not run: the last run of {visible(self.path)} ({run.shard or 'every case'}, started "
                    f"{run.info.get('started') or '?'}) selected it but recorded no result (stopped or killed before "
                    f"it?), and the file's record of an earlier run was judged under other settings"),
                    **{key: getattr(record, key) for key in CASE_FIELDS})
        return newest


# ---------------------------------------------------------------------------------------------------------
# Reading


def read(path: str | Path, *, missing_ok: bool = False) -> Stored:
    """Every record of the results file ``path`` (module docstring: what is refused and what is left out);
    an empty ``Stored`` when the file does not exist and ``missing_ok``."""
    source = str(path)
    try:
        fd = files.open_regular(path, MAX_FILE_BYTES)
    except PrmgError as error:
        if missing_ok and error.reason == "no such file" and not os.path.lexists(path):
            return Stored(source)
        raise PrmgError(f"cannot read the results file: {error.reason}", file=source) from None
    stored, newest, selected, distinct, keys, places = Stored(source), {}, 0, set(), {}, {}
    try:
        for number, line in _lines(fd, source):
            record = _parse(line, number, source)
            if record is _TORN:
                stored.torn += 1
            elif isinstance(record, RunRecord):
                selected += len(record.selection)
                if selected > MAX_FILE_SELECTED:
                    raise PrmgError(f"line {number}: its run records name more than {MAX_FILE_SELECTED} cases "
                                    f"together; not a results file prmg wrote?", file=source)
                distinct.update(record.selection)
                if len(distinct) > MAX_FILE_CASES:
                    raise PrmgError(f"line {number}: its run records select more than {MAX_FILE_CASES} different "
                                    f"cases; give prmg report the results of each suite (or shard) as a file of its "
                                    f"own", file=source)
                stored.runs.append(record)
                keys[record.run_id] = settings_key(record.settings), record.settings
                places[record.run_id] = record, _places(record, record.info.get("devices") or ())
            elif record is not None:
                _strictly_judged(record, stored.runs, number, source)
                _judged_as_recorded(record, keys, number, source)
                stored.records += 1
                older, (run, ran) = newest.pop(record.name, ()), places.get(record.run_id, (None, set()))
                mine = _places(run, chip_ids(record)) if run else {("", chip) for chip in chip_ids(record)}
                covered = mine | ran                            # where an older record of the case is superseded
                newest[record.name] = [*(kept for kept in older if not kept[1] <= covered), (record, mine)]
                if len(newest) > MAX_FILE_CASES:
                    raise PrmgError(f"line {number}: results of more than {MAX_FILE_CASES} cases in one file; "
                                    f"give prmg report the results of each suite (or shard) as a file of its own",
                                    file=source)
    finally:
        os.close(fd)
    stored.results = [record for kept in newest.values() for record, _ in kept]
    return stored


def _places(run: RunRecord, devices) -> set[tuple[str, str]]:
    """The (host, chip) each of ``devices`` of ``run`` is (``results.physical`` under its ``visible_devices``)."""
    shown = shown_chips(run.info.get("visible_devices"))
    return {(str(run.info.get("host") or ""), physical(str(device), shown)) for device in devices}


_BLANK_LINES = re.compile(rb"[ \t\r\f\v\n]*\n")             # whole blank lines: whitespace up to a newline
_CHUNK = files.MiB


def _lines(fd: int, source: str):
    """(number, line) for each line of the file ``fd`` that is not blank (numbered from 1, blank ones counted):
    read in chunks of ``_CHUNK`` bytes, a run of blank lines skipped at once (one match, its newlines counted),
    so that a file of blank lines costs what its bytes do; PrmgError naming ``source`` for a line longer than
    ``MAX_LINE_BYTES`` or a file growing past ``MAX_FILE_BYTES`` as it is read."""
    def refuse(what: str) -> PrmgError:
        return PrmgError(f"{what}; not a results file (written by prmg run --results)?", file=source)

    number, size, pending, held = 0, 0, [], 0          # pending: the pieces of a line not ended yet (held bytes)
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError as error:
            raise PrmgError(f"cannot read the results file: {files.os_reason(error)}", file=source) from None
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise PrmgError(f"cannot read the results file: over the limit of {files.describe_size(MAX_FILE_BYTES)}",
                            file=source)
        at = 0
        while at < len(chunk):
            blank = None if pending else _BLANK_LINES.match(chunk, at)
            if blank:
                number += chunk.count(b"\n", at, blank.end())
                at = blank.end()
                continue
            end = chunk.find(b"\n", at)
            piece = chunk[at:] if end < 0 else chunk[at:end + 1]
            pending.append(piece)
            held += len(piece)
            if held > MAX_LINE_BYTES:
                raise refuse(f"line {number + 1}: longer than {files.describe_size(MAX_LINE_BYTES)}")
            if end < 0:
                break
            number, at = number + 1, end + 1
            yield number, b"".join(pending)
            pending, held = [], 0
        if not chunk:
            if pending:
                yield number + 1, b"".join(pending)
            return


class _DuplicateKey(ValueError):
    """A JSON object naming one key twice (``{"status": "failed", "status": "passed"}``): which value counts
    depends on the reader, so no reader of prmg takes either."""


def _unique_keys(pairs: list) -> dict:
    """The object of ``pairs`` (``json``'s ``object_pairs_hook``); _DuplicateKey when a key comes twice."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _DuplicateKey(f"the key {show(twice)} appears twice in one object")
    return data


def parse_json(text: str):
    """``json.loads(text)``; ``json.JSONDecodeError`` for text that is not JSON, and ValueError saying why in words
    for JSON the parser cannot hold or no reader should believe: nesting past its stack (deeper than any
    ``MAX_DEPTH`` value, whatever the depth: a RecursionError no more), a number of more digits than Python reads,
    a key given twice in one object (``_unique_keys``)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except (json.JSONDecodeError, _DuplicateKey):
        raise
    except ValueError:
        raise ValueError("a number too long to read") from None


def problem(data, kinds: dict, required=()) -> str:
    """"" when the mapping ``data`` holds each field of ``kinds`` (field -> kind of ``_KINDS``) as its kind says,
    those of ``required`` present; else ``field 'F': what is wrong``."""
    if not isinstance(data, dict):
        return f"expected a mapping, got {type(data).__name__}"
    try:
        _checked(data, kinds, required)
    except _BadField as bad:
        return f"field '{bad.field}': {bad.reason}"
    return ""


def _parse(line: bytes, number: int, source: str) -> CaseResult | RunRecord | None:
    """The record on one line (None for a blank line, ``_TORN`` for a torn one); PrmgError naming the line for
    anything else."""
    def refuse(what: str) -> PrmgError:
        return PrmgError(f"line {number}: {what}; not a results file (written by prmg run --results)?", file=source)

    try:
        raw = line.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse("not UTF-8 text") from None
    text = raw.strip()
    if not text:
        return None
    try:
        data = parse_json(text)
    except json.JSONDecodeError:
        if _torn(raw.rstrip("\r\n")):
            return _TORN                                      # a line cut short by a crash
        raise refuse("not a JSON record") from None
    except ValueError as error:
        raise refuse(str(error)) from None
    if not isinstance(data, dict):
        raise refuse(f"expected a JSON record, got {show(data)}")
    schema = data.get("schema")
    try:
        if schema in READABLE_SCHEMAS:
            return _believed(CaseResult(**_compact(_shared(_checked(data, RECORD_FIELDS)))), number, source)
        if schema == RUN_SCHEMA:
            run = RunRecord(**_shared(_checked(data, RUN_FIELDS, required=set(RUN_FIELDS.values()) - RUN_OPTIONAL)))
            stated = {key: STATED_RESOLVED[key] if run.info.get(STATED_RESOLVED.get(key)) else key
                      for key in STATED_TWICE}
            differs = next((key for key, said in stated.items() if key in run.settings and said in run.info
                            and run.settings[key] != run.info[said]), None)
            if differs:
                said = stated[differs]
                raise PrmgError(f"line {number}: run record: its provenance says {said} {show(run.info[said])}, "
                                f"its settings {show(run.settings[differs])}: a record that "
                                f"contradicts itself is not believed (edited by hand?)", file=source)
            return run
    except _BadField as bad:
        raise refuse(f"field '{bad.field}': {bad.reason}") from None
    raise refuse(f"a record of schema {show(schema)}, not {SCHEMA} or {RUN_SCHEMA} (written by another version "
                 f"of prmg?)")


SHARED_TEXT = 64                       # texts up to this long are held once however many records hold them


def _shared(value):
    """``value`` with each mapping key and each text of at most ``SHARED_TEXT`` characters interned (``sys.intern``):
    records repeat the same keys (their metrics, timings and case definitions) and words (statuses, dtypes, their
    run's id and settings key), which a file of many records then holds once."""
    if isinstance(value, dict):
        return {sys.intern(key): _shared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shared(item) for item in value]
    return sys.intern(value) if isinstance(value, str) and len(value) <= SHARED_TEXT else value


def _compact(fields: dict) -> dict:
    """``fields`` with the error map's scores held as ``results.ScoreRows`` (a quarter of their lists' memory)."""
    error_map = fields.get("error_map")
    if error_map and error_map.get("values"):
        fields["error_map"] = {**error_map, "values": ScoreRows.of(error_map["values"])}
    return fields


def _believed(record: CaseResult, number: int, source: str) -> CaseResult:
    """``record`` (line ``number`` of ``source``) when it agrees with itself (``consistency.contradiction``), else a
    PrmgError naming the line, its case and what contradicts its status."""
    why = contradiction(record)
    if why:
        raise _disbelieved(record, number, source, why)
    return record


def _strictly_judged(record: CaseResult, runs: list, number: int, source: str) -> None:
    """PrmgError naming the line when ``record`` passed with a warning in a ``--strict`` run (one of ``runs``, the run
    records read so far), which fails every such case (``execute.strict_status``): its status was edited."""
    if record.status == "passed" and record.warnings and any(run.run_id == record.run_id and run.settings.get("strict")
                                                              for run in runs):
        raise _disbelieved(record, number, source, "status passed with a warning in a --strict run, which fails it")


def _judged_as_recorded(record: CaseResult, keys: dict[str, tuple[str, dict]], number: int, source: str) -> None:
    """PrmgError naming the line when ``record`` names a run recorded above it (``keys``: each run's id -> the
    ``settings_key`` of its run record's settings, and those settings) but was judged under other settings
    (``judged_under``): the run record's settings were edited (a shard judged under allclose made to read as the default
    standard's); when it was run by another runner than its run's settings state (an emulator shard whose run record,
    and the key of every record, were edited to read as the toolkit's); and when it
    names a run no run record above it states (a run record is written before its run's first result): the line of
    a shard's run record removed, whose settings (allclose, a fault, the emulator) a merge then never compared. A
    record that is no verdict ``--resume`` keeps (``UNTRUSTED``: the ``not_run`` of a stopped run) may hold no key;
    a record naming no run (``prmg.result/2``, before run records) is read as such (``merge.mixed_settings``)."""
    key, settings = keys.get(record.run_id, (None, {}))
    if key is None and record.run_id:
        raise _disbelieved(record, number, source, f"it names run {show(record.run_id)}, which no run record above it "
                                                   f"in the file states (its run record removed, or lines of files "
                                                   f"joined out of order?): settings no record states")
    if key is not None and record.judged_under != key and (record.judged_under or record.status not in UNTRUSTED):
        raise _disbelieved(record, number, source, "judged under other settings than its run's record states")
    runner = settings.get("runner")
    if record.runner and isinstance(runner, str) and runner and record.runner != runner:
        raise _disbelieved(record, number, source, f"run by the {show(record.runner)} runner, where its run's record "
                                                   f"states {show(runner)}")


def _disbelieved(record: CaseResult, number: int, source: str, why: str) -> PrmgError:
    """The error refusing ``record`` (line ``number`` of ``source``), which contradicts itself as ``why`` says."""
    return PrmgError(f"line {number}: case {show(record.name)}: {why}: a record that contradicts itself is not "
                     f"believed (edited by hand?)", file=source)


# The keys of each line ``encode`` writes, in its order: the schema, then the record's fields.
_LINE_KEYS = {SCHEMA: tuple(CaseResult.__dataclass_fields__), RUN_SCHEMA: tuple(RunRecord.__dataclass_fields__)}
_DECODER = json.JSONDecoder()
# A string, whole (its closing quote in group 1) or cut short at the end of the text; the match never backtracks.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:(")|\\?\Z)', re.DOTALL)
_SPACING = re.compile(r"(?:[^\s,:]|[,:] |[,:]\Z)*")     # json.dumps' whitespace: ", " and ": ", nothing else
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def _torn(text: str) -> bool:
    """Whether ``text`` (a line without its line end, not whole JSON) is a strict prefix of a line ``encode``
    writes, so that a crash may have cut it there: ASCII (``encode`` escapes the rest); ``{"schema": "S"`` for
    a schema S this prmg writes (``_LINE_KEYS``), or a prefix of that; then the fields of S in the encoder's
    order, each ``, "key": value``, every whole value of the field's kind (``_KINDS``) and written as the
    encoder writes it (``json.dumps``: its spacing, escapes and numbers); the last one may be cut anywhere in its
    separator, key or value, and a value cut short must be the start of one (``_completes``: ``1.5.`` or
    ``1e5.`` is none)."""
    if not text.isascii():
        return False
    heads = {schema: f'{{"schema": "{schema}"' for schema in _LINE_KEYS}
    schema = next((schema for schema, head in heads.items() if text.startswith(head)), None)
    if schema is None:
        return any(head.startswith(text) for head in heads.values())
    at, kinds = len(heads[schema]), RECORD_FIELDS if schema == SCHEMA else RUN_FIELDS
    for key in _LINE_KEYS[schema]:
        lead = f', "{key}": '
        if not text.startswith(lead, at):
            return lead.startswith(text[at:])             # cut before, in or right after the key
        at += len(lead)
        try:
            value, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):             # JSONDecodeError: a value cut short (or garbage)
            return _completes(text[at:])
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (end < len(text) and text[end] != ",") or (end == len(text) and number):
            return _completes(text[at:])                  # a number that may be cut (``1.``, ``1e-``), or garbage
        if _KINDS[kinds[key]](value) or json.dumps(value) != text[at:end]:
            return False
        at = end
    return at == len(text)


def _completes(cut: str) -> bool:
    """Whether ``cut`` may start a value as ``json.dumps`` writes it: whitespace only where it puts it (one space
    after each ``,`` and ``:`` outside strings), and some ending makes it whole JSON, tried with the parser: the
    end of its last token (a string's escape and quote, a literal's letters, a number's digit), then a value
    where one is due (``0``, or ``: 0`` after a key, ``"": 0`` after an object's comma), then its brackets
    closed."""
    structure, quote, string = _STRING.sub(lambda match: "0" if match[1] else match[0], cut).partition('"')
    if not _SPACING.fullmatch(structure + quote):
        return False
    closers = []
    for bracket in re.findall(r"[][{}]", structure):
        if bracket in "[{":
            closers.append("]" if bracket == "[" else "}")
        elif not closers or closers.pop() != bracket:
            return False
    if quote:                                            # ``string``: what the string cut short holds so far
        escape = re.search(r"(\\*)(u[0-9a-fA-F]{0,3})?\Z", string)
        odd = len(escape[1]) % 2
        endings = [("0" * (5 - len(escape[2])) if escape[2] and odd else "n" if odd else "") + '"']
    else:
        token = re.search(r"[-+.\w]*\Z", structure)[0]
        endings = ["", "0"] + [word[len(token):] for word in _LITERALS if token and word.startswith(token)]
    for ending in endings:
        for value in ("", "0", ": 0", '"": 0'):
            try:
                json.loads(cut + ending + value + "".join(reversed(closers)))
                return True
            except (ValueError, RecursionError):
                pass
    return False


class _BadField(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(field, reason)
        self.field, self.reason = field, reason


def _checked(data: dict, kinds: dict, required=("name", "status")) -> dict:
    """The fields of ``data`` named in ``kinds``, each checked (``_KINDS``); _BadField for the first that is
    wrong or, when its kind is ``required``, missing (other fields may be left out: older records lack some)."""
    out = {}
    for key, kind in kinds.items():
        if key not in data:
            if kind in required:
                raise _BadField(key, "missing")
            continue
        reason = _KINDS[kind](data[key])
        if reason:
            raise _BadField(key, reason)
        out[key] = data[key]
    return out


INT_RANGE = (-2**63, 2**64)            # [low, high) of any integer prmg stores: int64 and uint64 (seeds)


def _text(value) -> str:
    """"" when ``value`` is text that can be written anywhere (valid Unicode: no lone surrogate), else why not."""
    if not isinstance(value, str):
        return f"expected text, got {type(value).__name__}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid text (a lone surrogate)"
    return ""


def _json(value, depth: int = 0) -> str:
    """"" when ``value`` is JSON nested at most ``MAX_DEPTH`` deep, all its text valid, else why not."""
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, dict):
        return next((why for key, item in value.items() for why in (_text(key), _json(item, depth + 1)) if why), "")
    if isinstance(value, list):
        return next((why for item in value if (why := _json(item, depth + 1))), "")
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _int(value)
    return "" if value is None or isinstance(value, (bool, float)) else f"not JSON: {type(value).__name__}"


def _list_of(check, what: str):
    def checker(value) -> str:
        if not isinstance(value, list):
            return f"expected a list of {what}, got {type(value).__name__}"
        return next((f"item {index}: {why}" for index, item in enumerate(value) if (why := check(item))), "")
    return checker


def _optional(check):
    return lambda value: "" if value is None else check(value)


def _int(value, what: str = "an integer") -> str:
    """"" when ``value`` is an integer in ``INT_RANGE``, else why not."""
    if not isinstance(value, int) or isinstance(value, bool):
        return f"expected {what}, got {type(value).__name__}"
    return "" if INT_RANGE[0] <= value < INT_RANGE[1] else "an integer out of the range of int64 and uint64"


def _number(value) -> str:
    return "" if isinstance(value, float) else _int(value, "a number")


def _name(value) -> str:
    return _text(value) or ("" if value else "empty")


def _mapping_of(check, what: str):
    def checker(value) -> str:
        if not isinstance(value, dict):
            return f"expected a mapping of {what}, got {type(value).__name__}"
        return next((f"{show(key)}: {why}" for key, item in value.items() if (why := _text(key) or check(item))), "")
    return checker


def _scalar_or_json(value) -> str:
    return _json(value, MAX_DEPTH - 2)


def _error_map(value) -> str:
    """An empty mapping, or one as ``diagnosis.error_map`` makes it: ``rows`` and ``depth``; edges that rise
    from 0 to them, at most ``MAP_ROWS`` and ``MAP_COLUMNS`` cells apart; the ``slice`` [start, end) within
    the depth; a grid of the size the edges give of scores (numbers >= 0) or None; the ``metric`` named."""
    if value == {}:
        return ""
    if not isinstance(value, dict):
        return f"expected a mapping, got {type(value).__name__}"
    ints = _list_of(_int, "integers")
    for key, check in (("rows", _int), ("depth", _int), ("slice", ints), ("row_edges", ints),
                       ("column_edges", ints), ("values", _list_of(_list_of(_optional(_number), "numbers"), "rows"))):
        why = check(value.get(key))
        if why:
            return f"{key}: {why}"
    for key, extent, most in (("row_edges", "rows", MAP_ROWS), ("column_edges", "depth", MAP_COLUMNS)):
        edges = value[key]
        if not 1 <= len(edges) <= most + 1 or edges[0] != 0 or edges[-1] != value[extent] or \
                any(low >= high for low, high in zip(edges, edges[1:])):
            return f"{key}: expected at most {most + 1} rising integers from 0 to {extent}"
    slice_ = value["slice"]
    if len(slice_) != 2 or not 0 <= slice_[0] <= slice_[1] <= value["depth"]:
        return "slice: expected [start, end] with 0 <= start <= end <= depth"
    rows, columns = len(value["row_edges"]) - 1, len(value["column_edges"]) - 1
    if len(value["values"]) != rows or any(len(line) != columns for line in value["values"]):
        return "values: not a grid of the size its edges give"
    if any(score is not None and not score >= 0 for line in value["values"] for score in line):
        return "values: a score that is not a number >= 0"
    return _text(value.get("metric", ""))


def _shard(value) -> str:
    """"" (every case) or ``I/N`` with 1 <= I <= N in ASCII digits (``vocab.shard_numbers``)."""
    if value == "":
        return ""
    if not isinstance(value, str) or shard_numbers(value) is None:
        return f"expected '' or I/N with 1 <= I <= N, got {show(value)}"
    return ""


def _json_mapping(value) -> str:
    """A JSON object (a run's settings)."""
    return _json(value) or ("" if isinstance(value, dict) else f"expected a mapping, got {type(value).__name__}")


def _definition(value) -> str:
    """A result's case definition: a JSON object stating one case, as ``loader.case_record`` writes it (no ``sweep``:
    what a record states is never expanded into more cases when it is read again, e.g. for a report's coverage
    line)."""
    return _json_mapping(value) or ("a case definition holds no sweep (a record states one case)"
                                    if "sweep" in value else "")


def _selection(value) -> str:
    """The names of the cases a run selected: at most ``vocab.MAX_RUN_CASES``, as a run holds."""
    if isinstance(value, list) and len(value) > MAX_RUN_CASES:
        return f"{len(value)} case names, more than the {MAX_RUN_CASES} a run may hold"
    return _KINDS["names"](value)


def _together(value) -> str:
    """A sharded run's shard names of tiling siblings (``RunRecord.together``): case names to case names, at most
    ``vocab.MAX_RUN_CASES``, as a run holds."""
    if isinstance(value, dict) and len(value) > MAX_RUN_CASES:
        return f"{len(value)} case names, more than the {MAX_RUN_CASES} a run may hold"
    return _mapping_of(_name, "case names")(value) or next((f"{show(key)}: empty" for key in value if not key), "")


def _notes(value) -> str:
    """A list of (label, text) pairs."""
    pairs = _list_of(_list_of(_text, "text"), "(label, text) pairs")(value)
    return pairs or ("" if all(len(pair) == 2 for pair in value) else "expected (label, text) pairs")


def _status(value) -> str:
    return "" if isinstance(value, str) and value in STATUSES else f"unknown status {show(value)}"


def _case_rule(parse):
    """A kind that holds a value to the case format's own rule (``parse``, a ``fields.parse_*`` of a value and a
    ``Where``): a record states a case, so what no case file may hold (a negative dimension, a shape over
    ``fields.MAX_ARRAY_ELEMENTS`` elements, a slice end beyond int64) no record may either."""
    def checker(value) -> str:
        try:
            parse(value, Where(""))
        except PrmgError as error:
            return error.reason
        return ""
    return checker


def _time(per_second: int, unit: str):
    """A kind of time in ``unit``, ``per_second`` of them a second (``results.is_time``: finite, from 0 to
    ``results.MAX_SECONDS`` seconds)."""
    def checker(value) -> str:
        why = _number(value)
        return why or ("" if is_time(value, per_second) else
                       f"expected a time from 0 to {MAX_SECONDS * per_second:g} {unit}, got {show(value)}")
    return checker


def _run_info(value) -> str:
    if not isinstance(value, dict):
        return f"expected a mapping, got {type(value).__name__}"
    try:
        _checked(value, RUN_INFO_FIELDS, required=())
    except _BadField as bad:
        return f"{bad.field}: {bad.reason}"
    return ""


_KINDS = {
    "name": _name, "status": _status, "text": _text, "texts": _list_of(_text, "text"),
    "texts?": _optional(_list_of(_text, "text")), "int": _int, "int?": _optional(_int),
    "ints": _list_of(_int, "integers"), "ints?": _optional(_list_of(_int, "integers")),
    "devices": _list_of(lambda value: "" if isinstance(value, str) and value.isprintable() and not _text(value) else
                        _int(value, "a device id or a --cluster run's NPU (IP/NPU<k>)"), "device ids"),
    "names": _list_of(_name, "names"), "bool": lambda v: "" if isinstance(v, bool) else "expected true or false",
    "metrics": _mapping_of(_scalar_or_json, "metrics"), "json": _json, "error_map": _error_map,
    "run_info": _run_info, "notes": _notes, "shard": _shard, "mapping": _json_mapping, "definition": _definition,
    "selection": _selection, "together": _together,
    "dims": _case_rule(lambda value, where: parse_dims(value, "shape", where, four=False)),
    "slice": _case_rule(lambda value, where: value == [] or parse_slice(value, where)),    # []: not recorded
    "seed?": _optional(_case_rule(parse_seed)),
    "seconds": _time(1, "s"), "ms?": _optional(_time(MS_PER_SECOND, "ms")),
    "ms list": _list_of(_time(MS_PER_SECOND, "ms"), "times"),
    "timings": _mapping_of(_time(MS_PER_SECOND, "ms"), "times"),
}


# ---------------------------------------------------------------------------------------------------------
# Writing


def _what(record: CaseResult | RunRecord) -> str:
    """``the result of case 'NAME'`` or ``the run record``, for messages."""
    return f"the result of case '{record.name}'" if isinstance(record, CaseResult) else "the run record"


class Writer:
    """Records appended as JSON lines as they come (module docstring). Opened (for appending) when made, so
    that a path that cannot be written is a user error before anything runs."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd: int | None = None
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            info = None
        except (OSError, ValueError) as error:
            raise self._error("cannot open the results file", error) from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise PrmgError("the results file is a directory", file=str(path))
        try:
            if info is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            regular = info is None or stat.S_ISREG(info.st_mode)    # read too: its last byte is checked
            self._fd = os.open(self.path, _APPEND_FLAGS | (os.O_RDWR if regular else os.O_WRONLY), 0o666)
            files.set_blocking(self._fd)
            self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
            if self._regular and not _ends_in_newline(self._fd):
                files.write_all(self._fd, b"\n")      # a torn last line stays alone on its line
        except OSError as error:
            self.close()
            if error.errno == errno.ENXIO:
                raise PrmgError("cannot write the results file: it is a FIFO with no reader",
                                file=str(path)) from None
            raise self._error("cannot write the results file", error) from None

    def _error(self, what: str, error: Exception) -> PrmgError:
        """A PrmgError naming the path: ``what: reason``."""
        reason = files.os_reason(error) if isinstance(error, OSError) else "not a valid path"
        return PrmgError(f"{what}: {reason}", file=str(self.path))

    def append(self, record: CaseResult | RunRecord) -> None:
        """Write ``record`` as one JSON line (one write) and sync it to disk; PrmgError naming the path when it
        cannot be written (a full disk, ``/dev/full``, a closed pipe) or when a regular file would grow past
        ``MAX_FILE_BYTES``, which ``read`` refuses (so that every file a run writes can be read back)."""
        self.append_all([record])

    def append_all(self, records: Sequence[CaseResult | RunRecord]) -> None:
        """``append`` of each of ``records`` in order, synced to disk once at the end: a run stopped early writes its
        cases not run so (one sync each took 3-4 s for 800 cases on a loaded machine after a Ctrl-C, minutes for a
        suite of 100,000)."""
        if self._fd is None:
            raise PrmgError("cannot write the results file: it is closed", file=str(self.path))
        if not records:
            return
        record = records[0]
        try:
            size = os.fstat(self._fd).st_size if self._regular else 0
            for record in records:
                line = encode(record)
                size += len(line)
                if self._regular and size > MAX_FILE_BYTES:
                    raise PrmgError(f"cannot write {_what(record)} to the results file: it would grow past the limit "
                                    f"of {files.describe_size(MAX_FILE_BYTES)} that prmg reads (give --results a new "
                                    f"file)", file=str(self.path))
                files.write_all(self._fd, line)
            if self._regular:
                os.fsync(self._fd)
        except OSError as error:
            raise self._error(f"cannot write {_what(record)} to the results file", error) from None

    def close(self) -> None:
        """Close the file (again: nothing)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def encode(record: CaseResult | RunRecord) -> bytes:
    """The line ``record`` is stored as: its JSON (ASCII: anything else escaped), then a newline. A lone surrogate
    (a case file's name that is not UTF-8: Python holds its bytes so) is stored as the text of its escape
    (``\\udcff``), as error lines show it: the reader refuses a lone surrogate, and a run writes only what it reads."""
    data = record.to_dict()
    scores = data.get("error_map", {}).get("values") if isinstance(record, CaseResult) else None
    if isinstance(scores, ScoreRows):
        data["error_map"] = {**data["error_map"], "values": scores.lists()}
    line = json.dumps(data, default=str)
    if "\\ud" in line:                           # (also a valid character's surrogate pair, which stays as it is)
        line = json.dumps(_escaped(json.loads(line)))
    return (line + "\n").encode("ascii")


def _escaped(value):
    """``value`` (JSON data) with each lone surrogate of its texts written as its escape's text (valid text is
    unchanged)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    return [_escaped(item) for item in value] if isinstance(value, list) else value


def _ends_in_newline(fd: int) -> bool:
    """True when the regular file ``fd`` is empty or its last byte is a newline."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


# ---------------------------------------------------------------------------------------------------------
# Trusting records again (--resume)

UNTRUSTED = tuple(status for status, info in STATUSES.items() if not info.kept_on_resume)  # run again on resume


def trusted(stored: Stored, fingerprints: dict[str, str], key: str,
            chips: set[str] | None = None) -> dict[str, CaseResult]:
    """The records of ``stored`` that ``--resume`` keeps, by case name: the last record of each case among
    ``fingerprints`` (case name -> ``loader.fingerprint``) whose case is unchanged (same fingerprint), that was
    judged under the settings ``key``, whose status is a verdict (not ``error`` or ``not_run``: a timeout,
    a crash or a case that never ran is run again), and that ran on the host's ``chips`` the resuming run uses
    (``chips.run_chips``; None: any): a verdict of chip 0 is none of chip 1 (a per-chip CI job resuming from
    another chip's file ran nothing, exit 0, its header naming its own chip)."""
    shown = {run.run_id: shown_chips(run.info.get("visible_devices")) for run in stored.runs}

    def on_chips(result: CaseResult) -> bool:
        return chips is None or {physical(device, shown.get(result.run_id, [])) for device in chip_ids(result)} <= chips

    kept = {name: result for name, result in stored.latest().items()
            if result.status not in UNTRUSTED and name in fingerprints and result.fingerprint
            and result.fingerprint == fingerprints[name] and result.judged_under == key}
    return {name: result for name, result in kept.items() if on_chips(result)}

