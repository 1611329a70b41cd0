"""YAML cases as pytest items: ``pytest --prmg PATH [--prmg-runner R] [--prmg-supported-modes LIST]``.

Every case becomes a test item named after the case, judged exactly as ``prmg run`` judges it (same
worker processes, so a crashing kernel fails one item, not the session). Under pytest-xdist each
worker ``gwK`` runs on device ``K mod len(--prmg-devices)``. When ``--prmg`` is given without other
paths on the command line, only the cases are collected.
"""

from __future__ import annotations

import os

import pytest

def pytest_addoption(parser) -> None:
    group = parser.getgroup("prmg", "prmg: InplacePartialRotaryMulGrad cases as tests")
    group.addoption("--prmg", action="append", default=[], metavar="PATH",
                    help="Case file or folder to collect (repeatable).")
    group.addoption("--prmg-runner", default="auto", help="auto, aclnn or emulator (default auto).")
    group.addoption("--prmg-op-lib", default=None, metavar="PATH", help="Operator library override.")
    group.addoption("--prmg-supported-modes", default=None, metavar="LIST",
                    help="Rotary modes the target implements (default: interleave).")
    group.addoption("--prmg-standard", default=None, help="Judge every case by this standard.")
    group.addoption("--prmg-timeout", type=float, default=300.0, help="Seconds per case (0 = none).")
    group.addoption("--prmg-devices", default="0", metavar="LIST",
                    help="Devices to spread xdist workers over: 0,1,2,3 or all (default 0).")
    group.addoption("--prmg-keyword", default=None, metavar="SUBSTRING", help="Only cases whose name "
                    "contains SUBSTRING.")


def _only_cases(config) -> bool:
    return bool(config.getoption("prmg")) and config.args_source != pytest.Config.ArgsSource.ARGS


def pytest_ignore_collect(collection_path, config):
    if _only_cases(config):
        return True
    return None


class PrmgCollector(pytest.Collector):
    """The cases of the --prmg paths (collected once per session)."""

    def collect(self):
        from .suite import load_selected, target_modes

        config = self.config
        modes = target_modes(config.getoption("prmg_supported_modes"))
        cases = load_selected(config.getoption("prmg"), modes, config.getoption("prmg_keyword"))
        return [PrmgItem.from_parent(self, name=case.name, case=case) for case in cases]


class PrmgCaseFailure(Exception):
    """A case that failed or errored: its message and diagnosis."""


class PrmgItem(pytest.Item):
    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.user_properties.append(("source", case.source))

    def runtest(self) -> None:
        result = _get_executor(self.config).run([self.case])[0]
        self.user_properties.append(("prmg_status", result.status))
        if result.status == "skipped":
            pytest.skip(result.message)
        if result.status in ("failed", "error"):
            lines = [f"{result.status}: {result.message}"] + [f"  {d}" for d in result.details]
            raise PrmgCaseFailure("\n".join(lines))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, PrmgCaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.case.source, None, f"prmg case {self.case.name}"


_EXECUTOR = pytest.StashKey()


def _get_executor(config):
    """This pytest process's one worker (started on first use), on the device its xdist id picks:
    worker ``gwK`` runs on device ``K mod len(--prmg-devices)``."""
    if _EXECUTOR not in config.stash:
        from .execute import Executor, default_max_memory
        from .suite import parse_devices, runner_settings, target_modes

        settings = runner_settings(config.getoption("prmg_runner"), config.getoption("prmg_op_lib"),
                                   target_modes(config.getoption("prmg_supported_modes")),
                                   config.getoption("prmg_standard"),
                                   config.getoption("prmg_timeout") or None, default_max_memory())
        devices = parse_devices(str(config.getoption("prmg_devices")), settings.toolkit)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
        config.stash[_EXECUTOR] = Executor(settings, (devices[index % len(devices)],))
    return config.stash[_EXECUTOR]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items) -> None:
    if config.getoption("prmg"):
        from .errors import PrmgError

        try:
            collector = PrmgCollector.from_parent(session, name="prmg")
            items.extend(collector.collect())
        except PrmgError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config) -> None:
    executor = config.stash.get(_EXECUTOR, None)
    if executor is not None:
        executor.close()
