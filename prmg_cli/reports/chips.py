"""The chips of a merge (``prmg report``): a case's records from runs on several chips are one record of every chip,
and ``--chips`` names the chips each case must have run on.

- **Labels** (``Chips.label``). A record's device is the id its run gave the runtime. Under
  ``ASCEND_RT_VISIBLE_DEVICES`` (the run record's ``visible_devices``) that id counts the chips the variable shows,
  so the host's chip is the list's entry at that place: a per-chip CI job pinned by ``ASCEND_RT_VISIBLE_DEVICES=3``
  runs "device 0", chip 3. When the runs merged ran on several hosts each label is prefixed by its run's host
  (``ci-7/1``): device 1 of one host is not device 1 of another. ``Chips.labelled`` relabels a record: its
  ``device``, the keys of its ``device_statuses`` and its message's ``[failed on device 1; ...]``.
- **Several chips** (``combine``). A case's records from runs on different chips (per-chip CI jobs, each
  ``prmg run --devices K`` of the whole suite; ``--each-device`` runs) are not duplicates of one another: the report
  holds one record of the case with each chip's status (``device_statuses``), each chip's own records chosen among
  themselves by ``--duplicates`` (a rerun on chip 3 stands for chip 3 alone; so within one file appended to by
  per-chip jobs: ``Chips.current``), the worst chip's record standing for
  the case (``device`` the chips of that status, the message led by where each status came from), as
  ``execute.combined`` does within one run. The records chosen must be of one definition of the case (their
  ``fingerprint``): chips whose jobs ran other case files (chip 1's with sin set to 0, hiding its sign-wrong kernel)
  ran other cases, and the case is ``not_run`` on each.
- **Expected chips** (``--chips 0-7``). Every case a record holds must have run on each of those chips of each host
  that ran it: a chip with no record of it is ``not_run`` there, so a merge of 7 per-chip jobs of 8 is never green,
  and ``missing_lines`` names each such chip on stderr in one line. ``--chips a:0-7,b:0-7`` names the hosts too (as
  the run records name them: ``PRMG_HOST``, else the host name): every case that ran must have run on each chip of
  each host named, so a host whose jobs all failed to upload their files is ``not_run`` there, not absent; a host
  that ran cases and that it names no chip of is a warning (``Chips.unnamed``). Host labels are compared in any case
  (``CI-1`` is ``ci-1``, as DNS names are), and a label whose runs ran on several machines (their kernels' boot ids
  differ: ``PRMG_HOST`` set alike on two) is a warning (``Chips.clashes``). Without ``--chips`` too, a run that
  puts every case on each of its chips (one chip, ``--each-device``) and was stopped before some of the cases it
  selected is ``not_run`` on its chips for those (``Chips.stopped``), where another chip's record stood for them. A
  record of no device (a case settled before any chip ran it) is held to none. A chip, or a host, whose runs selected
  fewer cases than the others is a warning (``Chips.narrower``, ``Chips.narrower_hosts``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..device.execute import where_prefix
from ..errors import PrmgError
from .outputs.labels import first_names
from ..results import STATUSES, CaseResult, chip_ids, chip_ranges, physical, plural, shown_chips, visible

Entry = tuple[str, CaseResult]          # (results file, record)


def chip_order(label: str) -> tuple:
    """Labels in the host's order, then by number: ``2`` before ``10``, ``a/7`` before ``b/0``."""
    host, _, chip = label.rpartition("/")
    return host, len(chip), chip


@dataclass
class Chips:
    """How the records of a merge name their chips (module docstring) and which chips ``--chips`` expects."""

    runs: dict = field(default_factory=dict)        # run_id -> (host, the ids ASCEND_RT_VISIBLE_DEVICES names)
    hosts: bool = False                             # the runs ran on several hosts: labels say which
    expected: tuple = ()                            # --chips, as ids (text), or as labels ``a/0`` of the hosts it names
    ran: tuple = ()                                 # the hosts the records ran on
    stopped: dict = field(default_factory=dict)     # case -> {chip: the file whose run there recorded no result}
    selecting: dict = field(default_factory=dict)   # chip -> [(run, shard index, count)] of each run on each chip
    machines: dict = field(default_factory=dict)    # host -> {the boot id of a kernel its runs ran on: host names}

    @classmethod
    def of(cls, stores: Sequence, expected: Sequence[int] = ()) -> "Chips":
        """The chips of the runs of ``stores`` (``store.Stored``), ``expected`` those of ``--chips``, and the chips
        of each run that puts every case on each of its chips (one chip, or ``--each-device``) for each case it
        selected (in its shard) and its file holds no record of (``stopped``: killed before it got there)."""
        from ..device.execute import parse_shard, shard_of

        runs, spelt, machines = {}, {}, {}              # spelt: each host label in lower case -> its first spelling
        for run in (run for stored in stores for run in stored.runs):
            host = str(run.info.get("host") or "?")
            host = spelt.setdefault(host.lower(), host)     # host names are no case's (DNS): CI-1 is ci-1
            runs[run.run_id] = (host, shown_chips(run.info.get("visible_devices")))
            if run.info.get("boot_id"):
                machines.setdefault(host, {}).setdefault(str(run.info["boot_id"]), {})[
                    str(run.info.get("machine") or "?")] = None
        hosts = {runs.get(record.run_id, ("?",))[0] for stored in stores for record in stored.results
                 if record.device}
        asked = tuple(_spelt(str(chip), spelt) for chip in expected)
        chips = cls(runs, len(hosts) > 1 or names_hosts(asked), asked, ran=tuple(sorted(hosts)),  # labels hold the host
                    machines=machines)
        if expected:
            _refuse_cluster(stores, chips.expected)
        for stored in stores:
            held: dict[str, set] = {}                   # case -> the chips the file holds a record of it on
            for record in stored.results:
                held.setdefault(record.name, set()).update(chip_ids(chips.labelled(record)) or (ANY_CHIP,))
            for run in stored.runs:
                devices = run.info.get("devices") or []
                if not (run.info.get("each_device") or len(devices) == 1):
                    continue                # the cases shared among its chips: each ran on one of them
                index, count = parse_shard(run.shard) if run.shard else (0, 0)
                for device in devices:
                    chips.selecting.setdefault(chips.label(run.run_id, str(device)), []).append((run, index, count))
                for name in run.selection:
                    if not count or shard_of(run.together.get(name, name), count) == index:
                        for chip in (chips.label(run.run_id, str(device)) for device in devices):
                            if not held.get(name, set()) & {chip, ANY_CHIP}:
                                chips.stopped.setdefault(name, {})[chip] = stored.path
        return chips

    def narrower(self) -> list[str]:
        """Without ``--chips``, one warning per set of chips of a host whose runs of every case on each chip selected
        none of some cases that runs on its other chips selected (each within its shard), when some case ran on
        several of its chips (chips that share no case ran shards of the suite, one each): a per-chip job whose ``-k``
        or case list is narrower (a typo on one chip), or a chip's shard job lost, ran them nowhere there, and no
        record says they were meant to (``--chips`` makes each ``not_run`` there)."""
        from ..device.execute import shard_of

        hosts: dict[str, dict[str, list]] = {}
        for chip, runs in ([] if self.expected else self.selecting.items()):
            hosts.setdefault(chip.rpartition("/")[0], {})[chip] = runs
        lines = []
        for chips in (chips for chips in hosts.values() if len(chips) > 1):
            cases = {chip: {name: None for run, index, count in runs for name in run.selection
                            if not count or shard_of(run.together.get(name, name), count) == index}
                     for chip, runs in chips.items()}
            every = {name: None for names in cases.values() for name in names}
            if len(every) == sum(map(len, cases.values())):
                continue                        # no case on two chips: a shard on each
            lacking: dict[tuple, list[str]] = {}
            for chip in sorted(cases, key=chip_order):
                if missing := tuple(name for name in every if name not in cases[chip]):
                    lacking.setdefault(missing, []).append(chip)
            asked = id_ranges(sorted(chips, key=chip_order))
            lines += [f"warning: the runs on {'chip' if len(where) == 1 else 'chips'} {', '.join(map(visible, where))} "
                      f"selected {len(every) - len(missing)} of the {len(every)} cases run on the host's chips (never "
                      f"selected there: {first_names(list(missing))}: a narrower -k or case list, or a shard's job "
                      f"lost?); --chips {asked} reports each not_run there" for missing, where in lacking.items()]
        return lines

    @property
    def named(self) -> bool:
        """Whether ``--chips`` names the hosts (``a:0-7``: ``expected`` holds labels ``a/0``)."""
        return names_hosts(self.expected)

    def narrower_hosts(self, stores: Sequence) -> list[str]:
        """Unless ``--chips`` names the hosts, one warning per set of hosts whose runs of ``stores`` selected none of
        some cases that the runs of other hosts selected (their selections before sharding: hosts that ran a shard
        each selected every case): a host whose jobs' ``-k`` or case list is narrower ran them nowhere there, and
        ``--chips 0-7`` holds a case to the hosts that ran it alone (``--chips HOST:0-7`` names the host)."""
        selected: dict[str, dict] = {}
        for run in (run for stored in stores for run in stored.runs):
            selected.setdefault(self.runs[run.run_id][0], {}).update(dict.fromkeys(run.selection))
        every = {name: None for names in selected.values() for name in names}
        lacking: dict[tuple, list[str]] = {}
        for host, names in ([] if self.named else sorted(selected.items())):
            if missing := tuple(name for name in every if name not in names):
                lacking.setdefault(missing, []).append(host)
        return [f"the runs on {'host' if len(hosts) == 1 else 'hosts'} {', '.join(map(visible, hosts))} selected "
                f"{len(every) - len(missing)} of the {len(every)} cases run on the hosts merged (never selected there: "
                f"{first_names(list(missing))}: a narrower -k or case list on its jobs?); --chips HOST:IDS naming each "
                f"host reports each not_run there" for missing, hosts in lacking.items()]

    def clashes(self) -> list[str]:
        """A warning per host label whose runs ran on several machines: their kernels' boot ids differ
        (``provenance.machine``: the containers of one machine share it), so ``PRMG_HOST`` set alike on two machines
        (or a host name two share) merged their chips as one host's, chip 0 of one standing for chip 0 of the other
        (``--chips 0-7`` green with half of each machine's chips untested)."""
        return [f"host {visible(host)} names the runs of {len(boots)} machines (their kernels' boot ids differ; host "
                f"names {', '.join(map(visible, dict.fromkeys(name for names in boots.values() for name in names)))}"
                f"), whose chips merge as one host's: PRMG_HOST set alike on each? give each machine its own (or it "
                f"rebooted between its jobs)" for host, boots in self.machines.items() if len(boots) > 1]

    def unnamed(self) -> list[str]:
        """Under ``--chips HOST:0-7``, a warning per host that ran cases and that it names no chip of: its records
        are held to no chip (its jobs' ``PRMG_HOST`` unset, so each container's host name, or misspelt?)."""
        if not self.named:
            return []
        hosts, asked = {chip.rpartition("/")[0] for chip in self.expected}, chips_text(self.expected)
        return [f"host {visible(host)} ran cases and --chips {asked} names no chip of it: they are held to no chip "
                f"there (its jobs' PRMG_HOST unset or misspelt? --chips {asked},{visible(host)}:0-7 would hold them)"
                for host in self.ran if host not in hosts]

    def current(self, stored) -> dict[str, list[CaseResult]]:
        """``stored.current()``'s record of each case (``labelled``), led by the last record of each chip that no
        later run of the file ran on: a results file appended to by per-chip jobs one after another holds each chip's
        record (``--devices 1`` then ``--devices 0`` into one file took chip 0's pass for a rerun of chip 1's failure,
        exit 0). A later run on a chip replaces the earlier record there as a rerun does, a run sharing its cases among
        its chips on each of them (it may have run the case on any)."""
        ran = {run.run_id: {self.label(run.run_id, str(device)) for device in run.info.get("devices") or ()}
               for run in stored.runs}
        earlier: dict[str, dict[str, CaseResult]] = {}
        for record in stored.results:
            labelled, chips = self.labelled(record), earlier.setdefault(record.name, {})
            for chip in ran.get(record.run_id, set()) | set(chip_ids(labelled)):
                chips.pop(chip, None)
            chips.update(chips_of(labelled))
        current = {}
        for name, record in stored.current().items():
            labelled = self.labelled(record)
            covered = ran.get(record.run_id, set()) | set(chip_ids(labelled))
            current[name] = [*{id(view): view for chip, view in earlier.get(name, {}).items()
                               if chip not in covered}.values(), labelled]
        return current

    def label(self, run_id: str, device: str) -> str:
        """The host's chip that ``device`` of run ``run_id`` is (module docstring), prefixed by the host when the
        runs ran on several."""
        host, shown = self.runs.get(run_id, ("?", []))
        chip = physical(device, shown)
        return f"{host}/{chip}" if self.hosts else chip

    def labelled(self, record: CaseResult) -> CaseResult:
        """``record`` with its devices as the host's chips (``label``)."""
        pinned = self.runs.get(record.run_id, ("", ()))[1]         # the chips ASCEND_RT_VISIBLE_DEVICES named
        if not record.device or not (self.hosts or pinned) or all(self.label(record.run_id, device) == device
                                    for device in (record.device_statuses or {record.device: ""})):
            return record
        statuses = {self.label(record.run_id, device): status for device, status in record.device_statuses.items()}
        warned = {self.label(record.run_id, device): warnings for device, warnings in record.device_warnings.items()}
        devices = ",".join(self.label(record.run_id, device) for device in record.device.split(","))
        return replace(record, device=devices, device_statuses=statuses, device_warnings=warned,
                       message=prefixed(statuses, unprefixed(record)))

    def expected_of(self, name: str, entries: Sequence[Entry]) -> dict[str, str]:
        """The chips case ``name`` with records ``entries`` is expected to have run on, each with why (``WHY_CHIPS``
        or the file of a run there that selected it: ``stopped``): each chip of ``--chips`` on each host that ran it
        (none for a case no chip ran: skipped, or refused before any did; a passed or xfailed record naming no device,
        which no run writes, ran on none of them), or each chip of each host ``--chips HOST:0-7`` names (``named``)
        when any host ran it, and each chip of a run that stopped before it."""
        if not self.expected:
            return self.stopped.get(name, {})
        hosts = dict.fromkeys(self.runs.get(record.run_id, ("?",))[0] for _, record in entries
                              if record.device or _ran_nowhere(record))
        asked = [chip for chip in self.expected if hosts] if self.named else \
            [f"{host}/{chip}" if self.hosts else chip for host in hosts for chip in self.expected]
        return {**dict.fromkeys(asked, WHY_CHIPS), **self.stopped.get(name, {})}


def _spelt(label: str, spelt: dict[str, str]) -> str:
    """A chip's label of ``--chips`` (``a/0``, or an id) with its host as the runs first spelt it (``spelt``: lower
    case -> spelling; ``--chips CI-1:0-7`` names host ci-1), or as it is when no run names it."""
    host, slash, chip = label.rpartition("/")
    return f"{spelt.get(host.lower(), host)}/{chip}" if slash else label


def _ran_nowhere(record: CaseResult) -> bool:
    """Whether ``record`` names no device and says the kernel ran well (passed, xfailed): no run writes one (a skip,
    or a case refused before any chip ran it, names none), so under ``--chips`` it ran on none of them."""
    return not record.device and record.info.ok and bool(record.info.evidence)


def _refuse_cluster(stores: Sequence, expected: Sequence[str]) -> None:
    """PrmgError when a record of ``stores`` ran on a ``--cluster``'s NPU (``IP/NPU<k>``: a local device id never holds
    a ``/``) and ``--chips`` (``expected``) names chips: a cluster run shares the cases among its NPUs, none is pinned
    to a chip, so no case of it runs on each chip and ``--chips`` could only be red, naming chips ``0-7`` no record
    of which matched its labels."""
    for stored in stores:
        for record in stored.results:
            if any("/" in chip for chip in chip_ids(record)):
                raise PrmgError(f"--chips {chips_text(expected)}: {visible(stored.path)} holds records of a --cluster "
                                f"run (case '{visible(record.name)}' on {visible(record.device)}), which runs each "
                                f"case on one NPU of the cluster, not on each chip: --chips is for per-chip jobs and "
                                f"--each-device runs (leave it out for a cluster run)")


def run_chips(devices: Sequence, visible_devices: str) -> set[str]:
    """The host's chips (``physical``) a run on ``devices`` under ``ASCEND_RT_VISIBLE_DEVICES=visible_devices`` used."""
    shown = shown_chips(visible_devices)
    return {physical(str(device), shown) for device in devices}


WHY_CHIPS = ""           # a chip ``Chips.expected_of`` expects because --chips names it
ANY_CHIP = ""            # where a record of no device (a case settled before any chip ran it) holds the case


def chips_of(record: CaseResult) -> dict[str, CaseResult]:
    """Each chip ``record`` holds a status of -> the record as that chip's (its status and warnings there:
    ``chip_warnings``)."""
    if record.device_statuses:
        warned = chip_warnings(record)
        return {chip: replace(record, status=status, device=chip, device_statuses={}, device_warnings={},
                              warnings=list(warned.get(chip, ()))) for chip, status in record.device_statuses.items()}
    return {record.device: record} if record.device else {}


def chip_warnings(record: CaseResult) -> dict[str, list]:
    """Each chip of a record of several (``device_statuses``) -> the warnings of its launches: its
    ``device_warnings``, or in a record of an older prmg, which does not say which chip warned, the record's
    warnings on every chip."""
    return record.device_warnings or dict.fromkeys(record.device_statuses, record.warnings)


def _not_run(record: CaseResult, message: str = "") -> CaseResult:
    """A ``not_run`` record of ``record``'s case (its run and definition), with ``message``: no measurement."""
    from .store import CASE_FIELDS

    return CaseResult(name=record.name, status="not_run", run_id=record.run_id, message=message,
                      **{key: getattr(record, key) for key in CASE_FIELDS})


def prefixed(statuses: dict[str, str], message: str) -> str:
    """``message`` after ``where_prefix(statuses)`` (``[failed on device 3; passed on devices 0-2] ...``), as
    ``execute.combined`` writes a record of several chips; ``message`` alone when the chips agree."""
    where = where_prefix(statuses)
    return f"{where} {message}".strip() if where else message


def unprefixed(record: CaseResult) -> str:
    """``record``'s message without the ``[failed on device 1; ...]`` that ``execute.combined`` put first."""
    where = where_prefix(record.device_statuses) if record.device_statuses else ""
    return record.message[len(where):].lstrip() if where and record.message.startswith(where) else record.message


@dataclass
class Combined:
    """A case's one record of every chip (``combine``), the records it weighed (``weighed``: their runs' settings
    must be alike), the chips expected and no record holds (chip -> why: ``Chips.expected_of``), and whether a chip
    held several records (duplicates, named as such)."""

    record: CaseResult
    weighed: list
    missing: dict
    repeated: bool = False


def combine(entries: Sequence[Entry], pick: Callable[[list], Entry], rule: str,
            expected: dict[str, str] | None = None, asked: str = "") -> Combined | None:
    """One record of a case from its records ``entries`` when they come from several chips or miss a chip of
    ``expected`` (module docstring; ``asked`` the ``--chips`` that expects them, by default their ids: ``id_ranges``),
    each chip's record chosen by ``pick`` (``--duplicates`` ``rule``); None when
    they are of one chip (or set of chips) and miss none: duplicates, chosen among as they are, or when one of them
    names no chip (unless each such one is a pass, ``_ran_nowhere``, and a chip is missed: not run there)."""
    if len(entries) == 1 and not expected:
        return None
    held = [chip_ids(record) for _, record in entries]
    seen = {chip for chips in held for chip in chips}
    missing = {chip: why for chip, why in (expected or {}).items() if chip not in seen}
    if (not missing and len(set(held)) < 2) or not all(held):         # cheap: most cases of most merges
        if not missing or not all(_ran_nowhere(record) for (_, record), chips in zip(entries, held) if not chips):
            return None                 # a record of no chip that failed stands (a pass of none: not run there)
    views: dict[str, list[tuple[str, CaseResult, CaseResult]]] = {}
    for path, record in entries:
        for chip, view in chips_of(record).items():
            views.setdefault(chip, []).append((path, view, record))
    picked, weighed = {}, []
    for chip in sorted(views, key=chip_order):
        items = views[chip]
        path, view = pick([(path, view) for path, view, _ in items])
        picked[chip] = next((view, record) for _, candidate, record in items if candidate is view)
        weighed += [(path, record) for path, _, record in items] if rule == "worst" else \
            [(path, picked[chip][1])]
    definitions = {view.fingerprint for view, _ in picked.values() if view.fingerprint}
    if len(definitions) > 1:            # each chip's verdict of another case: none of them stands
        unlike = (f"not run alike: its records of chips {', '.join(map(visible, picked))} are of {len(definitions)} "
                  f"definitions of the case (fingerprints differ: per-chip jobs of other case files?), so no one "
                  f"verdict covers its chips; run it again on each")
        for chip, (view, _) in picked.items():
            picked[chip] = (_not_run(view, unlike),) * 2
    statuses = {chip: view.status for chip, (view, _) in picked.items()}
    statuses.update({chip: "not_run" for chip in missing})
    statuses = dict(sorted(statuses.items(), key=lambda item: chip_order(item[0])))
    worst = max(statuses.values(), key=lambda status: STATUSES[status].severity)
    chips = ",".join(chip for chip, status in statuses.items() if status == worst)
    standing = [record for view, record in picked.values() if view.status == worst]
    if standing:
        base = next((record for record in standing if record.status == worst), standing[0])
        message = unprefixed(base)
    else:                               # the worst is a chip with no record: not run there
        base = _not_run(next(iter(picked.values()))[1] if picked else entries[0][1])     # (no record names a chip)
        asked = asked or id_ranges([chip for chip, why in (expected or {}).items() if why == WHY_CHIPS])
        whys: dict[str, list[str]] = {}                # each why once: a list per why was 20 s of --chips 0-4095
        for chip, why in missing.items():
            whys.setdefault(why, []).append(chip)
        message = "; ".join(f"not run on {'chip' if len(chips) == 1 else 'chips'} {chip_ranges(chips)}: " + (
            f"no results file holds a record of it there (--chips {asked})" if why == WHY_CHIPS else
            f"the run of {visible(why)} there selected it but recorded no result (stopped or killed before it?)")
            for why, chips in whys.items())
    warned = {chip: view.warnings for chip, (view, _) in picked.items() if view.warnings}
    record = replace(base, status=worst, device=chips, device_statuses=statuses, device_warnings=warned,
                     warnings=list(dict.fromkeys(warning for warnings in warned.values() for warning in warnings)),
                     message=prefixed(statuses, message))
    return Combined(record, weighed, missing, any(len(items) > 1 for items in views.values()))


def id_ranges(labels: Sequence[str]) -> str:
    """The chip ids of ``labels`` (their hosts dropped, once each) as ``--chips`` takes them, runs of numbers as
    ranges: ``0-5,7`` (``chip_ranges``)."""
    return chip_ranges(list(dict.fromkeys(label.rpartition("/")[2] for label in labels)), ",", shortest=2)


def names_hosts(expected: Sequence[str]) -> bool:
    """Whether ``--chips`` as ``expected`` (``Chips.expected``) names the hosts (``a:0-7``, labels ``a/0``)."""
    return any("/" in chip for chip in expected)


def chips_text(expected: Sequence[str]) -> str:
    """``--chips`` as it names ``expected`` (``Chips.expected``): ids as ranges, ``0-5,7`` (``id_ranges``), or labels
    of the hosts it names host by host, ``a:0-7,b:0-3,6``."""
    if not names_hosts(expected):
        return id_ranges(expected)
    hosts: dict[str, list[str]] = {}
    for label in expected:
        host, _, chip = label.rpartition("/")
        hosts.setdefault(host, []).append(chip)
    return ",".join(f"{host}:{id_ranges(chips)}" for host, chips in hosts.items())


def missing_lines(missing: dict[tuple[str, str], int], cases: int, expected: Sequence[str]) -> list[str]:
    """One line per set of chips expected and lacking records of as many of the ``cases`` for one reason
    (``missing``: (chip, why: ``Chips.expected_of``) -> how many; the chips as ranges: ``chip_ranges``), ``expected``
    the chips of ``--chips``: ``chips 3-7 of --chips 0-7: no results file holds a result of them (36 cases reported
    not_run on each)``, ``chip 6: the run of chip6.jsonl there selected 16 cases and recorded no result of them
    (stopped or killed before them?): reported not_run there`` (a line per chip was 4093 lines of --chips 0-4095)."""
    asked = chips_text(expected)
    groups: dict[tuple[str, int], list[str]] = {}
    for (chip, why), count in sorted(missing.items(), key=lambda item: chip_order(item[0][0])):
        groups.setdefault((why, count), []).append(chip)
    lines = []
    for (why, count), chips in groups.items():
        named, there = (f"chip {visible(chips[0])}", "there") if len(chips) == 1 else \
            (f"chips {visible(chip_ranges(chips))}", "on each")
        if why != WHY_CHIPS:
            lines.append(f"{named}: the run of {visible(why)} there selected {plural(count, 'case')} and recorded no "
                         f"result of them (stopped or killed before them?): reported not_run {there}")
            continue
        what = f"no results file holds a result of {'it' if len(chips) == 1 else 'them'}" if count == cases else \
            f"{count} of {cases} cases in no results file {there} (its run stopped early?)"
        lines.append(f"{named} of --chips {asked}: {what} ({plural(count, 'case')} reported not_run {there})")
    return lines
