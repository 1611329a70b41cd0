"""YAML cases as pytest items: ``pytest --prmg PATH [--prmg-runner R] [--prmg-supported-modes LIST]``.

Each case file under the ``--prmg`` paths is collected as a pytest file, each case in it as a test item named after
the case (node id ``path/to/file.yaml::case``), judged exactly as ``prmg run`` judges it (same worker processes, so
a crashing kernel fails one item, not the session), whatever pytest options change outcomes: a known defect is an
xfail (``--runxfail``: the failure it is), an xpass fails, an item run again (a rerun plugin) fails, and prmg's
warnings reach pytest's warnings summary as ``PrmgWarning``. The session's exit status follows ``prmg run``'s rule
(``results.exit_code``): a session whose every case was skipped judged nothing and exits 5 (1 under
``--prmg-strict``). The header names the emulator faults ``PRMG_EMU_FAULT`` names; the end of the session says which
cases they acted on. Under pytest-xdist each worker ``gwK`` runs on device ``K mod len(--prmg-devices)`` (with
``--prmg-each-device``, every item on each device), and under ``--dist loadgroup`` a case's tiling siblings share a
worker (each item's result reaches the controlling process in its report's ``prmg_result`` property). When
``--prmg`` is given without other paths on the command line, only the cases are collected.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import pytest

from . import error_balance
from .case import Case

_EXECUTOR = pytest.StashKey()
_ROOTS = pytest.StashKey()         # (the case files of the --prmg paths, the folders above them)
_INFO = pytest.StashKey()          # the run's results.RunInfo (``_run_info``)
_SETTINGS = pytest.StashKey()      # the run's execute.RunSettings (``_settings``)
_PRELOADED = pytest.StashKey()     # the libraries preloaded ahead of the toolkit (``_preloaded``)
_RESULT = "prmg_result"            # the user property carrying an item's result to the report
_GROUP = "prmg-tiling-"            # the xdist group of a case's tiling siblings, before their first name


def pytest_addoption(parser) -> None:
    """``--prmg PATH`` and ``prmg run``'s options marked ``plugin`` (``commands.run.OPTIONS``) as ``--prmg-*``, with
    the same defaults and help."""
    from .commands.run import OPTIONS
    from .commands.options import add_plugin_options

    group = parser.getgroup("prmg", "prmg: InplacePartialRotaryMulGrad cases as tests")
    group.addoption("--prmg", action="append", default=[], metavar="PATH",
                    help="Case file or folder to collect (repeatable).")
    add_plugin_options(group, OPTIONS)


def run_request(config):
    """The ``prmg run`` request of this session's ``--prmg-*`` options (``--prmg-devices``: the devices the xdist
    workers are spread over)."""
    from .commands.run import OPTIONS, Request
    from .commands.options import plugin_values

    return Request(paths=tuple(config.getoption("prmg")), **plugin_values(config, OPTIONS))


def pytest_configure(config) -> None:
    """Make pytest collect the --prmg paths: instead of its default paths, or besides explicit ones."""
    paths = config.getoption("prmg")
    if not paths:
        return
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
        raise pytest.UsageError(f"--prmg: no such file or folder: {', '.join(missing)}")
    from .cases.loader import case_files, load_cases
    from .errors import PrmgError

    problems: list[PrmgError] = []
    selected = {Path(os.path.abspath(file)) for file in case_files(paths, problems.append)}
    for file in sorted(selected):            # one prmg run refuses, which pytest would pass by (a dangling symlink)
        if not file.is_file():
            try:
                load_cases([file])
            except PrmgError as error:
                problems.append(error)
    if problems:
        raise pytest.UsageError("\n".join(f"--prmg: {problem}" for problem in problems))
    config.stash[_ROOTS] = (selected, {folder for file in selected for folder in file.parents})
    config.pluginmanager.register(PrmgSession(config), "prmg-session")
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.extend(paths)
    else:
        config.args[:] = list(paths)


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config):
    """Never ignore a case file ``prmg run`` reads for the --prmg paths, nor a folder holding one: pytest's own
    rules (``norecursedirs``: ``build``, ``venv``, dot-folders; virtualenvs) would leave such files out."""
    selected = config.stash.get(_ROOTS, None)
    if selected and (collection_path in selected[0] or collection_path in selected[1]):
        return False
    return None


def pytest_collect_file(file_path: Path, parent):
    """A case file ``prmg run`` reads for the --prmg paths (``loader.case_files``: the same files, each once)
    becomes a ``PrmgFile``."""
    selected = parent.config.stash.get(_ROOTS, None)
    if selected and file_path in selected[0]:
        return PrmgFile.from_parent(parent, path=file_path)
    return None


class PrmgFile(pytest.File):
    """One case file: its cases, loaded and validated as ``prmg run`` does."""

    def collect(self):
        from .cases.loader import load_cases, validate
        from .commands.suite import check_judged, checked_settings
        from .errors import PrmgError

        try:
            settings = checked_settings(run_request(self.config))
        except PrmgError as error:                    # an option's mistake: the session's one line, not per file
            _usage_error(error)
        cases = load_cases([self.path])
        validate(cases, settings.supported_modes)
        check_judged(cases, settings.checks, settings.golden)
        for case in cases:
            yield PrmgItem.from_parent(self, name=case.name, case=case)

    def repr_failure(self, excinfo):
        """A case file's mistake as its one line; a usage error found while collecting (an option the session's
        settings refuse: ``_usage_error``) ends the session as it would anywhere else."""
        from .errors import PrmgError

        if isinstance(excinfo.value, pytest.exit.Exception):
            raise excinfo.value
        if isinstance(excinfo.value, PrmgError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class PrmgCaseFailure(Exception):
    """A case that failed or errored: its message and diagnosis."""


class PrmgWarning(UserWarning):
    """A warning prmg gave a case (a vacuous case, a check that could not run): shown in pytest's warnings
    summary; ``--prmg-strict`` fails such cases, as ``prmg run --strict`` does."""


class PrmgItem(pytest.Item):
    """One case: run through this pytest process's worker and judged like ``prmg run``."""

    def __init__(self, *, case: Case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.ran = ""                            # the status of its run in this session, "" before it
        self.user_properties.append(("source", case.source))

    def runtest(self) -> None:
        """Run the case once: an item run again in the session (pytest-rerunfailures' ``--reruns``, ``flaky``: after
        it failed) fails, as a pass after a failure is none (a kernel leaking device memory fails every few cases,
        one racing now and then)."""
        if self.ran:
            raise PrmgCaseFailure(f"rerun: this case ran in this session already ({self.ran}), and a case runs once: "
                                  f"a pass after a failure is no pass (take --reruns and flaky off prmg's items)")
        result = _get_executor(self.config).run([self.case])[0]
        self.ran = result.status
        self.user_properties.append((_RESULT, json.dumps({"status": result.status, "faults": result.faults,
                                                          "shape": result.shape, "op": result.op,
                                                          "dtype": result.dtype, "device": result.device,
                                                          "runner": result.runner,
                                                          "metrics": {
                                                              key: result.metrics[key] for key in error_balance.KEYS
                                                              if key in result.metrics}})))
        for text in result.warnings:             # -W error::prmg_cli.pytest_plugin.PrmgWarning fails them
            warnings.warn(PrmgWarning(f"prmg case {self.case.name}: {text}"))
        if result.status == "skipped":
            pytest.skip(result.message)
        if result.status == "xfailed" and not self.config.option.runxfail:
            pytest.xfail(result.message)         # --runxfail: reported as the failure it is
        if result.status == "xfailed" or not result.info.ok:    # failed, error, xpassed ([XPASS(strict)]), not_run
            label = "[XPASS(strict)] " if result.status == "xpassed" else ""
            lines = [f"{label}{result.status}: {result.message}"] + [f"  {d}" for d in result.details]
            raise PrmgCaseFailure("\n".join(lines))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, PrmgCaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"prmg case {self.case.name}"


class PrmgSession:
    """The session's prmg results, gathered from the items' reports (also those of xdist workers): the exit
    status by ``prmg run``'s rule, and the end lines saying which cases the emulator faults acted on and on which
    device failures concentrate (``labels.device_line``: xdist workers on several devices)."""

    def __init__(self, config):
        self.config = config
        self.results = []
        self.exit = 0              # the exit status prmg's rule gave a session pytest ended green

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items) -> None:
        """Each case's tiling siblings (``execute.together``) in one xdist group (``_GROUP`` and the first name), so
        that ``-n N --dist loadgroup`` runs them in one worker, as ``prmg run``'s schedule and ``--shard`` do (a tiling
        cache keyed by the tensors alone lives in one process): xdist's hook, after this one, makes the groups."""
        from .device.execute import together

        if not self.config.pluginmanager.hasplugin("xdist"):
            return
        cases = {item.case.name: item for item in items if isinstance(item, PrmgItem)}
        first = together([item.case for item in cases.values()])
        for name in {*first, *first.values()}:
            cases[name].add_marker(pytest.mark.xdist_group(f"{_GROUP}{first.get(name, name)}"))

    def pytest_runtest_logreport(self, report) -> None:
        recorded = dict(report.user_properties).get(_RESULT)
        if report.when == "call" and recorded is not None and report.outcome != "rerun":     # its last run's counts
            from .results import CaseResult

            values = json.loads(recorded)
            name = report.nodeid.rsplit("::", 1)[-1].split(f"@{_GROUP}", 1)[0]      # xdist suffixes the group
            self.results.append(CaseResult(name=name, status=values["status"],
                                           faults=values["faults"], shape=values["shape"], op=values["op"],
                                           dtype=values["dtype"], device=values["device"],
                                           metrics=values["metrics"]))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        """A session pytest ends green gets ``prmg run``'s exit code of its cases (``results.exit_code``): 5 when
        every case was skipped, 1 under ``--prmg-strict``."""
        from .results import ExitCode, exit_code

        if self.results and session.exitstatus == ExitCode.OK:
            session.exitstatus = self.exit = int(exit_code(self.results, run_request(self.config).strict))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """The end lines (after pytest's own summary, whose hook runs after ``pytest_sessionfinish``); the runner's
        line of the header (``pytest_report_header``) when the header was not shown (``-q``, ``--no-header``) and the
        host emulator ran the cases: a ``pytest -q --prmg`` session of ``--prmg-runner auto`` that found no toolkit
        said nothing of it (the runner's stderr line was captured with the first item's output)."""
        from .reports.outputs.labels import device_lines, fault_lines, runner_label
        from .results import run_warnings

        if self.results and _run_info(self.config).runner == "emulator" and not (
                self.config.get_verbosity() >= 0 and not self.config.getoption("no_header", False)):
            terminalreporter.write_line(f"prmg runner: {runner_label(_run_info(self.config))}")
        if self.results:
            for line in fault_lines(_run_info(self.config), self.results) + device_lines(self.results):
                terminalreporter.write_line(f"prmg {line}")
            for warning in run_warnings(self.results):          # fails the session under --prmg-strict
                terminalreporter.write_line(f"prmg warning: {warning}")
        if self.exit and all(result.status == "skipped" for result in self.results):
            terminalreporter.write_line(f"prmg: every case was skipped, nothing was judged: exit {self.exit} (as "
                                        f"prmg run's; 1 under --prmg-strict)")


def _settings(config):
    """The session's ``execute.RunSettings`` (``suite.settings_for``: the runner picked once, its stderr line said
    once); a runner that cannot be had (a toolkit named but unable to serve the operator) ends the session with
    ``prmg run``'s usage error and exit code."""
    if _SETTINGS not in config.stash:
        from .errors import PrmgError
        from .device.execute import default_max_memory
        from .commands.suite import device_list, device_request, settings_for

        try:
            request = run_request(config)
            device_request(device_list(request), "--prmg-devices")     # before anything touches the toolkit
            config.stash[_SETTINGS] = settings_for(request, max_memory=default_max_memory())
        except PrmgError as error:
            _usage_error(error)
    return config.stash[_SETTINGS]


def _usage_error(error) -> None:
    """End the session with ``prmg run``'s one line and exit code for a usage error, naming the plugin's flags
    (``plugin_words``)."""
    from .results import ExitCode

    pytest.exit(f"prmg: error: {plugin_words(str(error))}", returncode=int(ExitCode.USAGE))


def plugin_words(text: str) -> str:
    """``text`` with each ``prmg run`` flag the plugin takes written as the plugin's (``--runner`` ->
    ``--prmg-runner``): the shared checks name ``prmg run``'s flags, which a pytest command line does not have."""
    from .commands.run import OPTIONS

    for option in OPTIONS:
        if option.plugin:
            flag = option.plugin_flag.replace("--prmg-", "--", 1)
            text = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", option.plugin_flag, text)
    return text


def _run_info(config):
    """The session's ``results.RunInfo`` (``run_record.run_info``: runner, faults...), made once."""
    if _INFO not in config.stash:
        from .reports.run_record import run_info

        config.stash[_INFO] = run_info(_settings(config), ())
    return config.stash[_INFO]


def _get_executor(config):
    """This pytest process's one worker (started on first use), on the device its xdist id picks: worker ``gwK`` runs
    on device ``K mod len(--prmg-devices)``, and fewer pytest processes than devices is a usage error (a device no item
    runs on); under ``--prmg-each-device`` one worker per device, each item running on all of them. A device list the
    runtime lacks, or a device that cannot be opened, ends the session as ``prmg run`` ends (its one line, exit 2);
    in an xdist worker, where ending the session loses the line (xdist says only that the worker crashed), each of
    its items fails with that line instead, the devices tried once."""
    from .errors import PrmgError

    if _EXECUTOR not in config.stash:
        try:
            config.stash[_EXECUTOR] = _start_executor(config)
        except PrmgError as error:
            if not hasattr(config, "workerinput"):
                _usage_error(error)
            config.stash[_EXECUTOR] = error
    executor = config.stash[_EXECUTOR]
    if isinstance(executor, PrmgError):
        raise PrmgCaseFailure(f"prmg: error: {plugin_words(str(executor))}")
    return executor


def _start_executor(config):
    """``_get_executor``'s executor, started; PrmgError when it cannot be."""
    from .device.execute import Executor
    from .commands.suite import device_list, parse_devices
    from .errors import PrmgError
    from .vocab import decimal

    request = run_request(config)
    settings = _settings(config)
    devices = parse_devices(device_list(request), settings.toolkit)
    xdist = getattr(config, "workerinput", {})        # an xdist worker's (its environment's may be inherited)
    worker, processes = str(xdist.get("workerid", "gw0")), int(xdist.get("workercount", 1))
    index = (decimal(worker[2:]) if worker.startswith("gw") else None) or 0
    idle = () if settings.each_device else devices[processes:]        # devices no item would ever run on
    if idle:
        raise PrmgError(f"--prmg-devices {device_list(request)}: {len(devices)} devices, but {processes} "
                        f"pytest {'process runs' if processes == 1 else 'processes run'} the items, one "
                        f"device each: {'device' if len(idle) == 1 else 'devices'} "
                        f"{', '.join(map(str, idle))} would run no case (add -n {len(devices)}, or "
                        f"--prmg-each-device to run every item on each device)")
    return Executor(settings, devices if settings.each_device else (devices[index % len(devices)],))


def pytest_unconfigure(config) -> None:
    executor = config.stash.get(_EXECUTOR, None)
    if executor is not None and hasattr(executor, "close"):         # not the error it could not start with
        executor.close()


def pytest_report_header(config) -> list[str]:
    """With ``--prmg``, the lines pytest prints above the session: what runs the cases (the emulator and its
    build folder, or the toolkit and the operator library: ``labels.runner_label``), the emulator faults
    ``PRMG_EMU_FAULT`` names (``labels.fault_field``) and the libraries preloaded ahead of the toolkit, so that a
    green session of an emulator, or a red one with faults injected or a hook taking the toolkit's calls, says so at
    its top as ``prmg run``'s report does."""
    if not config.getoption("prmg"):
        return []
    from .reports.outputs.labels import fault_field, runner_label

    info = _run_info(config)
    faults = fault_field(info)
    return [f"prmg runner: {runner_label(info)}"] + ([f"prmg {faults[0]}: {faults[1]}"] if faults else []) + \
        _preload_lines(config)


def _preload_lines(config) -> list[str]:
    """The header's lines of the libraries preloaded ahead of the toolkit, as ``prmg run``'s header and stderr give them
    (``linkage.preload_labels``, ``linkage.interposer_warning``)."""
    from .device.linkage import interposer_warning, preload_labels

    found = _preloaded(config)
    warning = interposer_warning(found)
    return [f"prmg preloaded: {label}" for label in preload_labels(found)] + ([f"prmg warning: {warning}"] if warning
                                                                               else [])


def _preloaded(config) -> list:
    """The libraries preloaded ahead of the toolkit and what each takes (``linkage.interposers``), found once by a child
    that loads the toolkit's libraries as a worker does (``acl.preloads``); none when it cannot load them (the first
    item then says why)."""
    if _PRELOADED not in config.stash:
        from .device.acl import PROBE_TIMEOUT, preloads
        from .device.execute import call_in_child
        from .errors import PrmgError

        try:
            config.stash[_PRELOADED] = call_in_child(preloads, _settings(config).toolkit, timeout=PROBE_TIMEOUT)
        except PrmgError:
            config.stash[_PRELOADED] = []
    return config.stash[_PRELOADED]


def pytest_sessionstart(session) -> None:
    """Under ``--prmg --junitxml``, what ran the cases as the suite's ``prmg runner`` property (and ``prmg faults``),
    and, for the host emulator, the suite named as ``prmg run``'s JUnit names it (``junit.EMULATED``) unless
    ``junit_suite_name`` names it: a pytest JUnit of an emulator session said nothing of the emulator. The file
    holds a session not finished until pytest writes it (``_unfinished_junit``)."""
    from _pytest.junitxml import xml_key

    from .device.linkage import preload_labels
    from .reports.outputs.junit import EMULATED
    from .reports.outputs.labels import fault_field, runner_label

    config = session.config
    xml = config.stash.get(xml_key, None)
    if xml is None or not config.getoption("prmg"):
        return
    info = _run_info(config)
    xml.add_global_property("prmg runner", runner_label(info))
    faults = fault_field(info)
    if faults:
        xml.add_global_property(f"prmg {faults[0]}", faults[1])
    if _preloaded(config):
        xml.add_global_property("prmg preloaded", "; ".join(preload_labels(_preloaded(config))))
    if info.runner == "emulator" and xml.suite_name == "pytest":
        xml.suite_name = EMULATED
    _unfinished_junit(xml.logfile, info)


def _unfinished_junit(path: str, info) -> None:
    """Replace the ``--junitxml`` file, as the session starts, by prmg's JUnit of a session not finished (one error
    saying so: ``run_record.unfinished_results``): pytest writes its file at the session's end only, so a session killed
    (SIGKILL: out of memory, a CI job's timeout) left an earlier session's green file in a kept workspace standing for
    it. pytest's own file replaces it at the end; a folder not there yet (pytest makes it then) holds no stale file."""
    from .reports.run_record import unfinished_results
    from .errors import PrmgError
    from .files import write_text
    from .reports import outputs

    if os.path.isdir(os.path.dirname(os.path.abspath(path))):
        try:
            write_text(path, outputs.render_pieces("junit", unfinished_results(info, "this pytest session",
                                                                                 "pytest-session"), info,
                                                   outputs.RenderOptions()))
        except PrmgError:
            pass            # pytest says so when it writes the file at the end
