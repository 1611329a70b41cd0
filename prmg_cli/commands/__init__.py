"""Stage 7, commands: a command line in, an exit code out. prmg's commands, one module each, named like the command
(``gen-case`` in ``gen_case.py``), and what runs them: ``app`` (the Typer application), ``options`` (options declared
once), ``suite`` (``run`` and ``validate``), ``bench_kernel`` and ``bench_host`` (``bench``), ``doctor_findings``,
``dump_arrays``, ``case_writer`` (``gen-case``, ``import-ttk``), ``coverage_pages`` (``coverage``).

A command module holds everything of its command: ``OPTIONS`` (``options.Option`` records: flags, defaults,
help), ``Request`` (the typed value they make, built by ``options.request_type``), ``main(request) -> exit
code`` (its docstring is the command's ``--help``) and ``EPILOG`` (examples). Options several commands share
live in ``shared_options``. Its top level imports nothing heavy, so that the command line starts fast: ``cli`` builds
only the command it runs. Adding a command is one module and one entry in ``COMMANDS``.
"""

from __future__ import annotations

import importlib

# Command names in the order ``prmg --help`` lists them -> their module in this package.
COMMANDS = {
    "run": "run", "validate": "validate", "dump": "dump", "gen-case": "gen_case", "coverage": "coverage",
    "import-ttk": "import_ttk", "doctor": "doctor", "bench": "bench", "compare": "compare", "report": "report",
}


def load(name: str):
    """The module of the command ``name`` (a key of ``COMMANDS``)."""
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")
