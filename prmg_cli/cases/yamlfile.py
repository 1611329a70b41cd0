"""Reading one YAML case file: bounded, safe, and every mistake one line with its line and column.

``read_yaml(path)`` reads a regular file of at most ``MAX_FILE_BYTES`` (``files.read_regular``), decodes
it as UTF-8 (a byte order mark is allowed at the start; CRLF and CR line ends work), refuses any
character that is not printable text (``check_characters``), then composes and constructs the
document with the safe loader only:

- nodes are counted *while* they are composed, aliases counted at the size of what they refer to, so
  an alias bomb or a giant list is refused after at most ``MAX_EXPANDED_NODES`` nodes
  (``MAX_LIST_VALUES`` values in one list, nested lists counted in full) and ``MAX_DEPTH`` levels of
  nesting, before any Python value is built;
- an alias to a node that contains it, a key written twice in one mapping, an unknown or
  ``!!python/...`` tag, and a scalar that its tag cannot read (``!!int abc``, ``!!bool maybe``, the
  date ``2024-02-30``) are each one line;
- YAML syntax errors are one line in plain words, e.g. ``line 4, column 3: a mapping value is not
  allowed here (did you forget a space after ':' or quotes?)``.

Plain ``1e-3`` (an exponent without a dot) reads as a float, as in YAML 1.2; ``FLOAT_EXPONENT`` and
``add_resolvers`` let a dumper quote strings that would read back as such numbers.

libyaml's parser is used when PyYAML has it (it is several times faster); the composer, the limits and
the messages are the same either way. A plain document of at most ``MAX_PLAIN_BYTES`` (no alias, no merge key,
within the limits, no key twice, every value readable: every shipped case file) is composed by libyaml itself, its
values the same (``_plain_document``); any other is read (again) by the counting composer, which words the refusal
and, composing as it counts, never holds more than the limits allow.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from .. import files
from ..errors import PrmgError
from ..results import RESULTS_SCHEMAS, record_schema
from .fields import show

MAX_FILE_BYTES = 16 * files.MiB          # a case file larger than this is refused before parsing
MAX_EXPANDED_NODES = 2_000_000           # nodes of a document, aliases followed (alias bombs)
MAX_LIST_VALUES = 1_000_000              # values in one list, nested lists included (a values: list)
MAX_DEPTH = 100                          # levels of nesting
MAX_PLAIN_BYTES = files.MiB              # larger documents skip libyaml's composer, which builds every node before
                                         # the limits are checked (a 14 MB list: 2.2 GB), for the counting one

FLOAT_EXPONENT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def add_resolvers(cls) -> None:
    """Make the loader or dumper class ``cls`` read ``1e-3`` as a float (YAML 1.2), as case files do."""
    cls.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT_EXPONENT, list("-+0123456789"))


# ----------------------------------------------------------------------------------------------
# Text

# Allowed: what YAML calls printable (tab, line ends, printable ASCII, the BMP above U+009F without
# surrogates, U+FFFE, U+FFFF, and the other planes), minus line and paragraph separators, bidi
# controls (text that displays other than it reads), a BOM after the start, and the noncharacters.
_PLANE_NONCHARACTERS = "".join(f"\\U{plane:04x}fffe\\U{plane:04x}ffff" for plane in range(1, 17))
_REFUSED = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
                      "|[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ufdd0-\ufdef"
                      + _PLANE_NONCHARACTERS + "]")
_C0_NAMES = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN "
             "EM SUB ESC FS GS RS US").split()


def describe_character(char: str) -> str:
    """``U+0000 (NUL)``, ``U+007F (DEL)``, ``U+FFFE (a noncharacter)``, ``U+202E (RIGHT-TO-LEFT OVERRIDE)``."""
    code = ord(char)
    if code < 0x20:
        name = _C0_NAMES[code]
    elif code == 0x7F:
        name = "DEL"
    elif code == 0x85:
        name = "NEL, a C1 control"
    elif 0x80 <= code <= 0x9F:
        name = "a C1 control"
    elif code == 0xFEFF:
        name = "a byte order mark, allowed only at the start of the file"
    elif 0xD800 <= code <= 0xDFFF:
        name = "a surrogate"
    elif 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE:
        name = "a noncharacter"
    else:
        name = unicodedata.name(char, "an unnamed character")
    return f"U+{code:04X} ({name})"


def line_and_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based (line, column) of ``text[index]``, lines ending at CRLF, CR or LF as in YAML."""
    line, start = 1, 0
    for match in _LINE_BREAK.finditer(text, 0, index):
        line, start = line + 1, match.end()
    return line, index - start + 1


def decode(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text without its byte order mark; PrmgError naming the line of a bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise PrmgError(f"line {line}: {files.not_utf8(data, error)}", file=source) from None


def check_characters(text: str, source: str) -> None:
    """PrmgError naming the line, column and character of the first character a case file may not hold
    (controls such as NUL, VT or DEL, C1 controls, noncharacters such as U+FFFE, bidi controls, line
    separators, a BOM after the start); tabs and CR/LF line ends are fine."""
    found = _REFUSED.search(text)
    if found:
        line, column = line_and_column(text, found.start())
        raise PrmgError(f"line {line}, column {column}: the character {describe_character(found.group())} "
                        f"is not allowed in a case file", file=source)


# ----------------------------------------------------------------------------------------------
# The loader: counting composer, checked constructor


class _Refused(Exception):
    """A document the loader refuses: where (a YAML mark) and why."""

    def __init__(self, mark, reason: str):
        super().__init__(reason)
        self.mark = mark
        self.reason = reason


class _CountingComposer(Composer):
    """PyYAML's composer, refusing as it goes: more than MAX_EXPANDED_NODES nodes (each alias counted at
    the size of the node it names), a list of more than MAX_LIST_VALUES values, nesting deeper than
    MAX_DEPTH, an alias inside the node it names, and a key written twice in one mapping."""

    def __init__(self):
        Composer.__init__(self)
        self._open: list[list[int]] = []            # per node being composed: [expanded size, list values]
        self._anchored: dict[int, tuple[int, int]] = {}   # finished anchored node -> (size, list values)
        self._total = 0
        self._aliased = False
        self.explicit_tags: set[int] = set()        # scalar nodes whose tag was written

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            node = super().compose_node(parent, index)        # refuses an undefined alias
            if id(node) not in self._anchored:
                raise _Refused(event.start_mark, f"the alias '*{show(event.anchor, quote=False)}' is inside "
                                                 f"the node it names (a recursive alias)")
            size, values = self._anchored[id(node)]
            self._aliased = True
            self._count(size, event.start_mark)
        else:
            if len(self._open) >= MAX_DEPTH:
                raise _Refused(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
            self._count(1, event.start_mark)
            self._open.append([1, 0])
            node = super().compose_node(parent, index)
            size, values = self._open.pop()
            if isinstance(node, ScalarNode):
                values = 1
            elif isinstance(node, MappingNode):
                values = 0
            if event.anchor is not None:
                self._anchored[id(node)] = (size, values)
        if self._open:
            counts = self._open[-1]
            counts[0] += size
            if isinstance(parent, SequenceNode):
                counts[1] += values
                if counts[1] > MAX_LIST_VALUES:
                    raise _Refused(parent.start_mark, f"a list of more than {MAX_LIST_VALUES} values"
                                   + (self._alias_hint() or " (give a larger tensor as a .npy file)"))
        return node

    def _count(self, nodes: int, mark) -> None:
        """Add ``nodes`` to the document's expanded size; refuse it past MAX_EXPANDED_NODES."""
        self._total += nodes
        if self._total > MAX_EXPANDED_NODES:
            raise _Refused(mark, f"the document expands to more than {MAX_EXPANDED_NODES} nodes"
                           + self._alias_hint())

    def _alias_hint(self) -> str:
        """`` once its aliases are followed (an alias bomb?)`` when aliases were followed, else ``""``."""
        return " once its aliases are followed (an alias bomb?)" if self._aliased else ""

    def compose_scalar_node(self, anchor):
        tagged = self.peek_event().tag not in (None, "!")
        node = super().compose_scalar_node(anchor)
        if tagged:
            self.explicit_tags.add(id(node))
        return node

    def compose_mapping_node(self, anchor):
        node = super().compose_mapping_node(anchor)
        seen = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != _MERGE_TAG:
                if (key.tag, key.value) in seen:
                    raise _Refused(key.start_mark, f"the key {show(key.value)} is written twice in one mapping")
                seen.add((key.tag, key.value))
        return node


_TAG_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false", "null": "null",
              "timestamp": "a date or time", "binary": "base64 data", "str": "text"}


class _CheckedConstructor(SafeConstructor):
    """The safe constructor; a value its tag cannot read is refused (``_Refused``) at its line."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError):
            raise _Refused(node.start_mark, self._unreadable(node)) from None

    def _unreadable(self, node) -> str:
        """Why ``node`` cannot be read: ``!!int 'abc' is not an integer``, ``'2024-02-30' reads as a date
        or time but is not a valid one``."""
        tag = short_tag(node.tag)
        word = _TAG_WORDS.get(tag[2:], f"a {tag} value")
        if not isinstance(node, ScalarNode):
            return f"this {type(node).__name__[:-4].lower()} cannot be read as {word}"
        if tag == "!!int" and len(node.value) > 4000:
            return f"an integer of {len(node.value)} characters is too long to read"
        if id(node) in getattr(self, "explicit_tags", ()):
            return f"{tag} {show(node.value)} is not {word}"
        return f"{show(node.value)} reads as {word} but is not a valid one (quote it to make it text)"


class _Resolver(Resolver):
    """PyYAML's resolver, with ``1e-3`` read as a float."""


add_resolvers(_Resolver)

try:
    from yaml.cyaml import CParser as _FastParser
except ImportError:                                       # PyYAML built without libyaml
    _FastParser = None


class _PythonLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _CountingComposer,
                    _CheckedConstructor, _Resolver):
    """The loader with PyYAML's pure-Python parser."""

    def __init__(self, text: str):
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _CountingComposer.__init__(self)
        _CheckedConstructor.__init__(self)
        _Resolver.__init__(self)


if _FastParser is not None:
    class _FastLoader(_CountingComposer, _FastParser, _CheckedConstructor, _Resolver):
        """The loader with libyaml's parser under the same composer, constructor and resolver."""

        def __init__(self, text: str):
            _FastParser.__init__(self, text)
            _CountingComposer.__init__(self)
            _CheckedConstructor.__init__(self)
            _Resolver.__init__(self)

    class _ComposedInC(_FastParser, _CheckedConstructor, _Resolver):
        """libyaml's parser and composer (no limit checked while composing: ``_plain_document`` checks the nodes)."""

        def __init__(self, text: str):
            _FastParser.__init__(self, text)
            _CheckedConstructor.__init__(self)
            _Resolver.__init__(self)
else:
    _FastLoader = _ComposedInC = None

LOADERS = {"python": _PythonLoader, **({"libyaml": _FastLoader} if _FastLoader else {})}


# ----------------------------------------------------------------------------------------------
# Reading


def read_yaml(path: str | Path, source: str | None = None):
    """The document of the case file ``path`` as plain Python values (None when it holds none); every
    refusal is a PrmgError naming ``source`` (default: ``path``) and, inside the text, line and column."""
    source = str(path) if source is None else source
    data = files.read_regular(path, MAX_FILE_BYTES)
    return parse_yaml(decode(data, source), source)


def parse_yaml(text: str, source: str, parser: str | None = None):
    """The document in ``text`` (see ``read_yaml``); ``parser`` picks ``python`` or ``libyaml``
    (default: libyaml when PyYAML has it)."""
    check_characters(text, source)
    schema = record_schema(text)
    if schema:                  # a results file given as cases (report --cases r.jsonl): its second line was a YAML
        results = schema.startswith(RESULTS_SCHEMAS)            # syntax error, naming no file of the right kind
        raise PrmgError(f"holds {schema} records, not cases" + (
            ": a results file (prmg run --results) is read by prmg report, prmg compare and run --resume" if results
            else ""), file=source)
    if parser is None and _ComposedInC is not None and len(text) <= MAX_PLAIN_BYTES:
        document = _plain_document(text)
        if document is not _NOT_PLAIN:
            return document
    loader_class = LOADERS[parser] if parser else (_FastLoader or _PythonLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return loader.construct_document(node)
    except _Refused as refused:
        raise PrmgError(f"{_where(refused.mark)}{refused.reason}", file=source) from None
    except yaml.MarkedYAMLError as error:
        raise PrmgError(syntax_message(error, text), file=source) from None
    except yaml.YAMLError as error:
        raise PrmgError(f"malformed YAML: {str(error).splitlines()[0] if str(error) else type(error).__name__}",
                        file=source) from None
    except RecursionError:
        raise PrmgError(f"nested deeper than {MAX_DEPTH} levels", file=source) from None
    finally:
        loader.dispose()


_NOT_PLAIN = object()


def _plain_document(text: str):
    """The document in ``text`` composed by libyaml (several times faster than ``_CountingComposer``) when it is
    plain (``_within_limits``: no alias, no merge key, no key twice in a mapping, within ``MAX_DEPTH`` levels and
    ``MAX_LIST_VALUES`` nodes) and every value readable. Else (a refusal, or anything unusual) ``_NOT_PLAIN``: the
    counting loader then reads it again and words the refusal."""
    loader = _ComposedInC(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if not _within_limits(node):
            return _NOT_PLAIN
        return loader.construct_document(node)
    except Exception:                                     # any: read again, by the loader that words it
        return _NOT_PLAIN
    finally:
        loader.dispose()


def _within_limits(root) -> bool:
    """Whether the node tree ``root`` is one the counting composer takes as it is (``_CountingComposer``'s rules):
    each node once (no alias), within ``MAX_DEPTH``, at most ``MAX_LIST_VALUES`` nodes in all (so no list holds more
    values, and the document has fewer nodes than ``MAX_EXPANDED_NODES``), no key twice in one mapping, no merge."""
    seen, level = set(), [root]
    for _ in range(MAX_DEPTH):                            # one level of nesting a turn
        below = []
        for node in level:
            if id(node) in seen:
                return False
            seen.add(id(node))
            if isinstance(node, SequenceNode):
                below += node.value
            elif isinstance(node, MappingNode):
                keys = [(key.tag, key.value) for key, _ in node.value if isinstance(key, ScalarNode)]
                if len(set(keys)) != len(keys) or any(tag == _MERGE_TAG for tag, _ in keys):
                    return False
                below += [part for pair in node.value for part in pair]
        if not below:
            return True
        if len(seen) + len(below) > MAX_LIST_VALUES:
            return False
        level = below
    return False


def short_tag(tag: str) -> str:
    """``tag:yaml.org,2002:int`` as ``!!int``; other tags as written."""
    return tag.replace("tag:yaml.org,2002:", "!!") if tag else "?"


def _where(mark) -> str:
    """``line L, column C: `` of a YAML mark (``""`` without one)."""
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


_TOKENS = {"<block end>": "the end of an indented block", "<block mapping start>": "a new mapping",
           "<block sequence start>": "a new list", "<scalar>": "a value", "<stream end>": "the end of the file",
           "?": "a key", ":": "a ':'", "-": "a '-' list entry", ",": "a ','", "<document start>": "'---'",
           "<document end>": "'...'", "<flow mapping start>": "a '{'", "<flow sequence start>": "a '['",
           "<flow mapping end>": "a '}'", "<flow sequence end>": "a ']'", "<alias>": "an alias",
           "<anchor>": "an anchor", "<tag>": "a tag", "<block entry>": "a '-' list entry"}


def _found(problem: str) -> str:
    """What a parser problem says it found (``but found '<block mapping start>'``), in words."""
    match = re.search(r"but (?:found|got) '?([^']*)'?$", problem)
    if not match:
        return ""
    token = match.group(1)
    return f" (found {_TOKENS.get(token, repr(token))})"


def syntax_message(error: yaml.MarkedYAMLError, text: str) -> str:
    """A YAML syntax or structure error as one line: ``line L, column C: <what is wrong, in plain words>``."""
    problem = str(error.problem or error.context or "malformed YAML")
    words = f"{error.context or ''} {problem}"
    problem_mark, context_mark = error.problem_mark, error.context_mark
    opened = f" opened at line {context_mark.line + 1}, column {context_mark.column + 1}" if context_mark else ""
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if tag:
        return (f"{_where(problem_mark)}unsupported YAML tag {show(short_tag(tag.group(1)))} "
                "(only plain YAML is read; nothing is executed)")
    rules = (
        (r"mapping values are not allowed", problem_mark,
         "a mapping value is not allowed here (did you forget a space after ':' or quotes?)"),
        (r"could not find expected ':'", context_mark, _missing_colon(text, context_mark)),
        (r"expected ',' or '\]'", problem_mark, f"the list '['{opened} is not closed: expected ',' or ']'"),
        (r"expected ',' or '\}'", problem_mark, f"the mapping '{{'{opened} is not closed: expected ',' or '}}'"),
        (r"end of stream", problem_mark, f"the quoted text{opened} is not closed"),
        (r"unknown escape character", context_mark,
         "the double-quoted text holds an unknown escape (write a backslash as \\\\, or use single quotes)"),
        (r"expected escape sequence", context_mark,
         "the double-quoted text holds a \\x, \\u or \\U escape without its hexadecimal digits"),
        (r"tab character", problem_mark, "a tab is used for indentation (indent with spaces)"),
        (r"character '\\t' that cannot start", problem_mark, "a tab cannot start a value (indent with spaces)"),
        (r"cannot start any token", problem_mark,
         f"{_character_at(text, problem_mark)} cannot start a value (quote the value)"),
        (r"alphabetic or numeric character", problem_mark,
         "an anchor or alias name ('&name', '*name') must be letters, digits, '-' or '_'"),
        (r"found undefined alias", problem_mark,
         "the alias " + _quoted_name(problem, "*") + " names no anchor (an anchor '&name' must come first)"),
        (r"found duplicate anchor", problem_mark, "the anchor " + _quoted_name(words, "&")
         + " is defined twice" + (f" (first at line {context_mark.line + 1})" if context_mark else "")),
        (r"expected a single document", problem_mark,
         "a second YAML document ('---'); a case file holds one document"),
        (r"document start", problem_mark,
         "this line does not fit the document (check its indentation)" + _found(problem)),
        (r"expected <block end>|expected '-' indicator|did not find expected key", problem_mark,
         f"this line does not fit the block{opened} (check its indentation)" + _found(problem)),
        (r"block sequence entries are not allowed", problem_mark,
         "a '-' list entry is not allowed here (check the indentation)"),
        (r"expected the node content|expected node content", problem_mark, "a value is missing here" + _found(problem)),
        (r"found unhashable key", problem_mark, "a key cannot be a list or a mapping"),
        (r"for merging", problem_mark, "'<<' merges a mapping, or a list of mappings, only"),
        (r"undefined tag handle", problem_mark, "an unknown tag handle (only plain YAML is read)"),
        (r"incompatible YAML document", problem_mark, "only YAML 1.x documents are read"),
        (r"maximum nesting depth", problem_mark, f"nested deeper than {MAX_DEPTH} levels"),
        (r"chomping or indentation indicators|expected a comment or a line break", problem_mark,
         "a bad block scalar header after '|' or '>'"),
    )
    for pattern, mark, reason in rules:
        if re.search(pattern, words):
            return f"{_where(mark or problem_mark)}{reason}"
    return f"{_where(problem_mark or context_mark)}malformed YAML: {show(problem.splitlines()[0], quote=False)}"


def _missing_colon(text: str, mark) -> str:
    """Why the line at ``mark`` is not a ``key: value`` entry: ``key:value`` has no space after its ':' (YAML
    reads it as one plain text, not a key and a value), else the key has no ':' at all."""
    lines = _LINE_BREAK.split(text)
    line = lines[mark.line][mark.column:].rstrip() if mark is not None and mark.line < len(lines) else ""
    glued = re.match(r"([^:#\s][^:#]*):(?=\S)", line)
    if glued:
        fixed = f"{glued.group(0)} {line[glued.end():]}"
        return (f"{show(line)} has no space after ':' (YAML needs a space after ':' in a mapping, else it reads "
                f"the line as plain text: write {show(fixed)})")
    return "a key without ':' (each line of a mapping is 'key: value'; quote text that holds ': ')"


def _character_at(text: str, mark) -> str:
    """The character at a YAML mark, e.g. ``'@'`` (``this character`` when it cannot be found)."""
    if mark is None:
        return "this character"
    lines = _LINE_BREAK.split(text)
    if mark.line < len(lines) and mark.column < len(lines[mark.line]):
        return repr(lines[mark.line][mark.column])
    return "this character"


def _quoted_name(problem: str, sigil: str) -> str:
    """``'*name'`` for the anchor or alias a composer problem names (``''`` when it names none)."""
    match = re.search(r"'([^']*)'", problem)
    return f"'{sigil}{show(match.group(1), quote=False)}'" if match else ""

