"""How a case name is shortened to fit a table's column (``short_names``): whole words, never two names to one
text, never the mode or dtype word that tells a case from another.
"""

from __future__ import annotations

import re

from ...dtypes import DTYPES
from ...vocab import ROTARY_MODES
from .screen import ELLIPSIS

# The words that say a rotary mode or a dtype: a shortened name keeps them once their column is gone (the
# aliases "half" and "float" are left out: in a name, "half" is the mode).
MODE_WORDS = frozenset(ROTARY_MODES)
DTYPE_WORDS = frozenset([*DTYPES, *(dtype.short for dtype in DTYPES.values())])


def _render(words: list[str], kept: set[int]) -> str:
    """A name's ``words`` (``re.split`` at ``.`` and ``_``: words at the even places, separators between) with the
    words not in ``kept`` left out: each run of them, with the separators beside it, is one ``…``."""
    text, previous = "", True
    for place in range(0, len(words), 2):
        if place in kept:
            text += (ELLIPSIS if not previous else words[place - 1] if place else "") + words[place]
        previous = place in kept
    return text + ("" if previous else ELLIPSIS)


def _shortened(words: list[str], needed: set[int], columns: int) -> str | None:
    """The name of ``words`` with the words ``needed`` and as many of its last words as fit in ``columns``
    (the end of a name tells cases of one family apart), then of the words after its first; None when the words
    needed alone do not fit."""
    kept = set(needed)
    if len(_render(words, kept)) > columns:
        return None
    for order in (range(len(words) - 1 - (len(words) - 1) % 2, -1, -2), range(0, len(words), 2)):
        for place in order:
            if place not in kept:
                if len(_render(words, kept | {place})) > columns:
                    break
                kept.add(place)
    return _render(words, kept)


def _telling(words: dict[str, list[str]], names: list[str], given: dict[str, set[int]]) -> dict[str, set[int]]:
    """For each of ``names`` (split into ``words``), the places of the words that tell it from every other name
    with as many words: ``given[name]`` (the first word and those it keeps anyway), then a greedy hitting set of
    the places where it still reads as some of them (first the place where it differs from the most of them;
    of equals, the shortest word, then the last)."""
    telling = {}
    for count in {len(words[name]) for name in names}:
        peers = [name for name in words if len(words[name]) == count]
        holders = [{} for _ in range(0, count, 2)]       # per place: word -> the peers with it there
        for name in peers:
            for index, holder in enumerate(holders):
                holder.setdefault(words[name][2 * index], set()).add(name)
        for name in (name for name in names if len(words[name]) == count):
            places, left = set(given[name]), set(peers) - {name}
            for place in places:
                left &= holders[place // 2][words[name][place]]
            while left:
                index = max(range(len(holders)), key=lambda i: (len(left - holders[i][words[name][2 * i]]),
                                                                 -len(words[name][2 * i]), i))
                left &= holders[index][words[name][2 * index]]
                places.add(2 * index)
            telling[name] = places
    return telling


def short_names(names: list[str], columns: int, kept: tuple = ()) -> tuple[dict[str, str], bool]:
    """Each of ``names`` -> its text in ``columns`` characters, and whether every one fits. A name that fits is
    shown whole; a longer one keeps whole words (split at ``.`` and ``_``), each run of words left out shown as
    ``…``: its first word, the first place of each word of the sets ``kept`` it has (the table passes the words of
    a mode, then of a dtype, whose column is gone), the other words that tell it from every name of as many words
    (``_telling``), then as many of its last words as fit, then of those after its first. When that does not fit,
    it keeps fewer of the sets ``kept`` (the last first), then only the words that tell it apart, then is cut in the
    middle (``_middle``). So shortening never hides the mode or dtype word that tells a case from another, and
    keeps the others where they fit. Names of other lengths that would read the same take their next text; one
    whose text another's still equals is shown whole (the second value is then False)."""
    unique = list(dict.fromkeys(names))
    words = {name: re.split(r"([._])", name) for name in unique}
    long = [name for name in unique if len(name) > columns]
    options = {name: [] for name in long}
    for count in range(len(kept), -1, -1):          # all the kept sets, then fewer, then only the telling words
        given = {name: {0} | {words[name].index(word) for word in set(words[name][::2])
                              & frozenset().union(*kept[:count])} for name in long}
        for name, places in _telling(words, long, given).items():
            options[name].append(_shortened(words[name], places, columns))
    for name, places in _telling(words, long, {name: set() for name in long}).items():
        options[name] = [*dict.fromkeys(filter(None, [*options[name], _shortened(words[name], places, columns)])),
                         _middle(name, columns)]
    choice = dict.fromkeys(long, 0)
    while True:          # names of other lengths may read the same: all but the first of them take their next text
        shown = {name: options[name][choice[name]] if name in options else name for name in unique}
        clashing = [group[1:] for group in _groups(shown).values() if len(group) > 1]
        moving = [name for group in clashing for name in group if choice.get(name, -1) + 1 < len(options.get(name, ()))]
        if not moving:
            break
        for name in moving:
            choice[name] += 1
    complete = all(len(text) <= columns for text in shown.values())
    for group in clashing:
        for name in group:
            shown[name], complete = name, False
    return shown, complete


def _groups(shown: dict[str, str]) -> dict[str, list[str]]:
    """The names of ``shown`` by their text."""
    groups: dict[str, list[str]] = {}
    for name, text in shown.items():
        groups.setdefault(text, []).append(name)
    return groups


def _middle(name: str, columns: int) -> str:
    """``name`` cut in the middle to ``columns`` characters (``head…tail``): the last resort of ``short_names``."""
    head = (columns - len(ELLIPSIS)) // 2
    return name[:head] + ELLIPSIS + name[len(name) - (columns - len(ELLIPSIS) - head):]
