"""The ``prmg`` command line as a Typer application: one click command per module of ``commands/``, built only when
asked for (``_Group``), each calling its module's ``main`` with the request its options make. ``cli.main`` runs it
(and imports it only once it holds the stop signals: this module loads typer, the slow part of starting)."""

from __future__ import annotations

import typer
import typer.core

from . import COMMANDS, load
from .. import __version__
from ..errors import suggest
from ..writes import write_stdout
from .options import request_values, typer_signature


NUMBERS = ("int", "float")       # click's names of the types of prmg's int and float options


class _HelpWritten:
    """``--help`` written as every command's output is (``writes.write_stdout``): a pipe closed by its reader
    (``prmg run --help | true``) ends it quietly, exit 0; click's echo raised BrokenPipeError, which prmg took for a
    pipe of its own closing (exit 3, a traceback), or ended it as exit 1."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.callback = _show_help
        return option


def _show_help(ctx, param, value) -> None:
    """The help option's callback: the help on standard output, then exit 0."""
    if value and not ctx.resilient_parsing:
        write_stdout(ctx.get_help())
        ctx.exit()


class _Command(_HelpWritten, typer.core.TyperCommand):
    """A command whose usage line names its arguments plainly (``PATH...``, ``FILE.csv``), and whose help's example
    commands fit the width as its text does."""

    def get_help(self, ctx) -> str:
        """click's help, each example command wider than the help's width (a line of ``prmg ...`` or one continuing
        it) broken before a word -- not between a flag and its value where another place fits -- and continued on
        the next line after a backslash, as the examples written on two lines are (the shell reads the same command);
        a word wider than the line stays whole."""
        width, lines = ctx.make_formatter().width, []
        for line in super().get_help(ctx).splitlines():
            continued = bool(lines) and lines[-1].endswith(" \\")
            if len(line) <= width or not (continued or line.lstrip().startswith("prmg ")):
                lines.append(line)
                continue
            indent = len(line) - len(line.lstrip(" "))
            more = indent if continued else indent + 4
            tail = line.endswith(" \\")
            words = line.strip().removesuffix(" \\").split(" ")
            while words:
                room, count = width - indent, len(words)
                while count > 1 and len(" ".join(words[:count])) + (2 if count < len(words) or tail else 0) > room:
                    count -= 1
                while 1 < count < len(words) and words[count - 1].startswith("-"):      # a flag and its value
                    count -= 1
                end = " \\" if count < len(words) or tail else ""
                lines.append(" " * indent + " ".join(words[:count]) + end)
                words, indent = words[count:], more
        return "\n".join(lines)

    def parse_args(self, ctx, args):
        """click's parsing, once no option of one value is given twice: click keeps the last silently, and what the
        first asked for was lost (``prmg compare A B --report json:a.json --report markdown:b.md`` wrote only b.md;
        ``-o a.json -o b.json``). A flag may be repeated; a repeatable option (``--report`` of run and report) is.
        A number option's value holds ASCII alone: click's int and float read ``٣`` as 3, a case file refuses it."""
        seen = set()
        values, _, order = self.make_parser(ctx).parse_args(args=list(args))
        for param in order:
            if param.param_type_name == "option" and not (param.multiple or param.is_flag or param.count):
                if param.name in seen:
                    ctx.fail(f"Option {'/'.join(param.opts)!r} given more than once: it takes one value (only the "
                             f"last would count)")
                seen.add(param.name)
            text = values.get(param.name)
            if param.type.name in NUMBERS and isinstance(text, str) and not text.isascii():
                ctx.fail(f"Invalid value for {'/'.join(param.opts)!r}: {text!r} is not a valid {param.type.name}: "
                         f"digits 0-9 only, as a case file writes a number")
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx) -> list[str]:
        """``[OPTIONS]`` then each argument's metavar (or name), ``...`` when it takes several."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or param.name.upper()
                pieces.append(name if name.endswith("...") or param.nargs == 1 else f"{name}...")
        return pieces


class Stopped(BaseException):
    """A stop signal (``stop``: the ``KeyboardInterrupt`` or ``errors.Terminated``) inside a command, carried
    past typer, which would turn it into a silent exit 130."""

    def __init__(self, stop: KeyboardInterrupt):
        super().__init__(stop)
        self.stop = stop


class _Group(_HelpWritten, typer.core.TyperGroup):
    """prmg's commands (``commands.COMMANDS``), each built from its module only when asked for: a command imports
    its own module, not the others'. A stop signal inside one comes out of the app as ``Stopped``."""

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, name: str):
        return _build(name) if name in COMMANDS else None

    def resolve_command(self, ctx, args):
        """The command ``args`` names; a usage error suggesting the nearest command for a misspelt one."""
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            ctx.fail(f"No such command {args[0]!r}{suggest(args[0], COMMANDS)}.")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx, formatter) -> None:
        """Each command with the first sentence of its help, whole (click would cut it at 45 columns)."""
        rows = []
        for name in COMMANDS:
            paragraph = " ".join(load(name).main.__doc__.strip().split("\n\n")[0].split())
            rows.append((name, paragraph.split(". ")[0].rstrip(".") + "."))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as stop:
            raise Stopped(stop) from None
        except BrokenPipeError as error:   # standard output and error take a closed pipe quietly themselves, so
            raise RuntimeError(f"a pipe inside prmg closed: {error}") from error   # this one is prmg's own: a bug
            # (click ends any EPIPE as exit 1, nothing said: a worker's closed pipe hid that way until 3c8fa4c)


# What runs once the command line has loaded, as the command starts (``cli.main`` puts ``cli.command_starts`` here:
# the garbage collector's pause ends): a hook, because a stage imports no entry point above it (``test_layers``).
STARTING: list = []


def _build(name: str):
    """The click command of ``name``: its module's ``OPTIONS`` as parameters, ``main``'s docstring as its help,
    calling ``main(Request(...))`` and exiting with the code it returns."""
    module = load(name)

    def command(**given) -> None:
        for hook in STARTING:
            hook()
        raise typer.Exit(module.main(module.Request(**request_values(module.OPTIONS, given))) or 0)

    command.__signature__ = typer_signature(module.OPTIONS)
    command.__annotations__ = {option.name: option.annotation for option in module.OPTIONS}
    command.__doc__ = module.main.__doc__
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    one.command(name, cls=_Command, epilog=module.EPILOG)(command)
    return typer.main.get_command(one)


app = typer.Typer(
    name="prmg",
    cls=_Group,
    help="Prove that Ascend 950's InplacePartialRotaryMulGrad (and its forward, InplacePartialRotaryMul) is right: "
         "YAML cases, a numpy golden for all four rotary modes, the operator called through ctypes-loaded aclnn "
         "libraries (or the host emulator when no toolkit is installed), dtype-aware precision standards and "
         "reports.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


@app.callback(invoke_without_command=True)
def _main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        write_stdout(f"prmg {__version__}")     # a closed pipe quietly, a full disk one line, as every command's
        raise typer.Exit(0)
