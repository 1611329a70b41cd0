"""Command options declared once. A command lists its options as ``Option`` records; from that one list come its
Typer parameters (``typer_signature``), the typed request it builds (``request_type``: a frozen dataclass whose
defaults are the options' defaults) and, for the options marked ``plugin``, the pytest plugin's ``--prmg-*``
options (``add_plugin_options``, ``plugin_values``) -- so a flag, its help and its default are written in one
place (as pytest's plugins own their options).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import List, Optional, Sequence

from ..errors import PrmgError
from ..vocab import number
from ..writes import output_file


REQUIRED = ...            # the default of an option or argument the command line must give


@dataclass(frozen=True)
class Option:
    """One option (or, with ``argument``, the positional arguments) of a command: the request field ``name``,
    its ``flags`` (``("-o", "--output")``), its ``default`` (None: not given; ``()`` for a repeatable one;
    ``REQUIRED``), its
    ``help``, ``metavar`` and ``kind`` (``str``, ``int``, ``float``, ``bool`` or ``list``: repeatable text), whether
    the pytest plugin offers it too (``plugin``: as ``--prmg-`` + its long flag), and whether it names files or
    folders (``path``: an empty one, what an unset shell variable gives, is refused rather than read as the current
    folder or as not given), and whether it names what the command writes (``output``: ``-`` is standard output,
    ``writes.output_file``)."""

    name: str
    flags: tuple
    default: object
    help: str
    metavar: str | None = None
    kind: type = str
    plugin: bool = False
    argument: bool = False
    path: bool = False
    output: bool = False

    @property
    def required(self) -> bool:
        """Whether the command line must give it (its ``default`` is ``REQUIRED``)."""
        return self.default is REQUIRED

    @property
    def annotation(self):
        """The type Typer reads: ``List[str]`` for a repeatable option, ``Optional[...]`` when it may be unset (a path
        as text: click's ``Path`` reads '' as '.')."""
        if self.kind is list:
            return List[str]
        return Optional[self.kind] if self.default is None else self.kind

    @property
    def field_type(self):
        """The type of its request field (what ``value`` gives): ``tuple[str, ...]`` for a repeatable option, else
        ``kind``; ``Optional`` when it may be unset."""
        kind = tuple[str, ...] if self.kind is list else self.kind
        return Optional[kind] if self.default is None else kind

    @property
    def plugin_flag(self) -> str:
        """The pytest plugin's flag: ``--prmg-`` and the long flag's name (``--prmg-runner``)."""
        return "--prmg-" + next(flag for flag in self.flags if flag.startswith("--"))[2:]

    def parameter(self) -> inspect.Parameter:
        """The Typer parameter of this option."""
        import typer

        value = ... if self.required else list(self.default) if isinstance(self.default, tuple) else self.default
        if self.argument:
            default = typer.Argument(value, metavar=self.metavar, help=self.help)
        else:
            default = typer.Option(value, *self.flags, metavar=self.metavar, help=self.help)
        return inspect.Parameter(self.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=self.annotation)

    def value(self, given):
        """The request's value of what the command line gave (a tuple for a repeatable option); PrmgError for an
        empty path."""
        value = tuple(str(item) for item in (given or ())) if self.kind is list else given
        if self.path and "" in (value if self.kind is list else (value,)):
            name = "/".join(self.flags) or f"argument {self.metavar}"
            raise PrmgError(f"{name}: an empty path (an unset shell variable?), which would read as the current "
                            f"folder or as not given")
        return output_file(value) if self.output else value


def typer_signature(options: Sequence[Option]) -> inspect.Signature:
    """The signature a Typer command function gets (``function.__signature__``) to take ``options``."""
    return inspect.Signature([option.parameter() for option in options])


def request_type(name: str, options: Sequence[Option], doc: str):
    """A frozen dataclass with one field per option, of the option's type (``Option.field_type``), its default the
    option's (a required one first, without)."""
    fields = [(option.name, option.field_type) for option in options if option.required]
    fields += [(option.name, option.field_type, dataclasses.field(default=option.default)) for option in options
               if not option.required]
    made = dataclasses.make_dataclass(name, fields, frozen=True)
    made.__doc__ = doc
    return made


def request_values(options: Sequence[Option], given: dict) -> dict:
    """The request fields of the values Typer passed (``Option.value`` each)."""
    return {option.name: option.value(given[option.name]) for option in options if option.name in given}


def add_plugin_options(group, options: Sequence[Option]) -> None:
    """Add the ``plugin`` options to a pytest option group, as ``--prmg-<flag>`` with the same default and help."""
    for option in options:
        if not option.plugin:
            continue
        if option.kind is bool:
            group.addoption(option.plugin_flag, action="store_true", default=option.default, help=option.help)
        elif option.kind is list:
            group.addoption(option.plugin_flag, action="append", default=[], metavar=option.metavar,
                            help=option.help)
        else:
            group.addoption(option.plugin_flag, type=_plugin_type(option.kind), default=option.default,
                            metavar=option.metavar, help=option.help)


def _plugin_type(kind: type):
    """``kind`` as argparse's type of a ``--prmg-*`` value: an int or float in ASCII digits alone (``vocab.number``),
    as ``prmg run``'s options and case files take them (``--prmg-seed ٣`` was 3), named ``kind`` in pytest's error."""
    if kind not in (int, float):
        return kind

    def parse(text: str):
        return number(text, kind)

    parse.__name__ = kind.__name__
    return parse


def plugin_values(config, options: Sequence[Option]) -> dict:
    """The request fields of the ``plugin`` options as pytest parsed them."""
    return {option.name: option.value(config.getoption(option.plugin_flag[2:].replace("-", "_")))
            for option in options if option.plugin}
