"""Every command the README's ``sh`` blocks and the ``--help`` examples show runs green on a correct kernel.

The commands run in scratch copies of the repository (``cases/``, ``tests/data/``), so an example that
writes files writes them there. ``make`` lines (the README's two set-up commands) are not run here:
they are what CI itself runs. ``--runner aclnn`` becomes ``--runner emulator`` (no NPU here).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

BIN = Path(sys.executable).parent


def _shell_blocks(text: str) -> list[str]:
    """The lines of every ``sh`` code block (indented ones too), continuation lines joined."""
    lines, inside = [], False
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            inside = stripped == "```sh" if not inside else False
            continue
        if inside:
            lines.append(stripped)
    joined, pending = [], ""
    for line in lines:
        pending += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(pending)
            pending = ""
    return joined


def _help_examples() -> list[str]:
    """The ``prmg ...`` example lines of every command's ``--help``."""
    from prmg_cli.commands import COMMANDS, load

    commands = []
    for name in COMMANDS:
        module = load(name)
        text = (module.main.__doc__ or "") + module.EPILOG
        commands += [line.strip() for line in text.splitlines() if line.strip().startswith("prmg ")]
    return commands


def readme_commands() -> list[str]:
    """The commands to run: README shell lines and help examples, without comments and ``make`` lines."""
    found = []
    for line in _shell_blocks((ROOT / "README.md").read_text()) + _help_examples():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith(("make ", "pytest ")) and line not in found:
            found.append(line)
    return found


# Slow commands that read no file an earlier one writes: their own test items, so xdist runs them beside the rest.
ALONE = ("prmg bench --host", "PRMG_EMU_DEVICES=2 prmg run cases/smoke.yaml --cluster local")


def command_groups() -> dict[str, list[str]]:
    """The commands, split into items that can run side by side: each ``ALONE`` command, then the rest
    in README order (later examples read files earlier ones write)."""
    commands = readme_commands()
    groups = {command: [command] for command in commands if command in ALONE}
    groups["in order"] = [command for command in commands if command not in ALONE]
    return groups


@pytest.fixture
def scratch(tmp_path) -> Path:
    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    shutil.copytree(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    return tmp_path


def test_there_are_examples_to_run():
    commands = readme_commands()
    assert len(commands) >= 15 and any("--report junit:" in c for c in commands)
    assert sum(map(len, command_groups().values())) == len(commands)


@pytest.mark.parametrize("group", list(command_groups()))
def test_readme_and_help_examples_run_green(scratch, group):
    """Every command of ``group`` in order, in one scratch folder; the emulator offers 4 devices for the
    ``--devices 0,1,2,3`` example."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PRMG_EMU_DEVICES="4")
    failures = []
    for command in command_groups()[group]:
        shell = command.replace("--runner aclnn", "--runner emulator")
        result = subprocess.run(["bash", "-c", shell], cwd=scratch, env=env, capture_output=True, text=True,
                                timeout=300)
        if result.returncode != 0 or "Traceback" in result.stderr:
            failures.append(f"{command}: exit {result.returncode}\n{result.stdout[-800:]}{result.stderr[-800:]}")
    assert not failures, "\n\n".join(failures)
