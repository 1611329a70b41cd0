"""What an ELF shared library defines and what it binds by name, read from its file without loading it.

``exports_symbol`` (does it define this global or weak dynamic symbol: ``toolkit`` asks it of every library it
finds), ``defined_symbols`` (every dynamic symbol it defines of a binding) and ``bound_by_name`` (the symbols its
dynamic relocations name: the calls the dynamic linker binds for it by name, which a preloaded library's definition
takes first; ``linkage`` asks both of a worker's libraries). The file's sections are read through ``mmap``: nothing is
loaded or executed, and a file that is not ELF (or is cut short) defines and binds nothing.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from pathlib import Path
from typing import Iterable


def exports_symbol(path: Path | str, name: str) -> bool:
    """True when the ELF shared library at ``path`` defines the global/weak dynamic symbol ``name``.

    Reads the section headers, finds SHT_DYNSYM and its string table, and looks for a symbol whose name
    is ``name`` and whose section index is not SHN_UNDEF. Nothing is loaded or executed.
    """
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as image:
            return _elf_defines(image, name.encode())
    except (OSError, ValueError, struct.error):
        return False


SHT_RELA, SHT_DYNSYM, SHT_REL = 4, 11, 9     # ELF section types: relocations (with addends, without), dynamic symbols


def _sections(image) -> tuple[str, bool, list[tuple]]:
    """(endian, is_64, the section headers as tuples: name, type, flags, address, offset, size, link...) of the ELF
    file ``image``; no section for a file that is not ELF."""
    if image[:4] != b"\x7fELF":
        return "<", True, []
    is_64 = image[4] == 2
    endian = "<" if image[5] == 1 else ">"
    if is_64:
        shoff, = struct.unpack_from(endian + "Q", image, 0x28)
        shentsize, shnum = struct.unpack_from(endian + "HH", image, 0x3A)
        section_format = endian + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(endian + "I", image, 0x20)
        shentsize, shnum = struct.unpack_from(endian + "HH", image, 0x2E)
        section_format = endian + "IIIIIIIIII"
    return endian, is_64, [struct.unpack_from(section_format, image, shoff + index * shentsize)
                           for index in range(shnum)]


def _dynsym_tables(image) -> Iterable[tuple[int, int, bytes, str, bool]]:
    """(offset, size, string table, endian, is_64) of each SHT_DYNSYM section of the ELF file ``image``."""
    endian, is_64, sections = _sections(image)
    for section in sections:
        sh_type, sh_offset, sh_size, sh_link = section[1], section[4], section[5], section[6]
        if sh_type == SHT_DYNSYM:
            strtab_offset, strtab_size = sections[sh_link][4], sections[sh_link][5]
            yield sh_offset, sh_size, image[strtab_offset:strtab_offset + strtab_size], endian, is_64


def _elf_defines(image: mmap.mmap, name: bytes) -> bool:
    for sh_offset, sh_size, strtab, endian, is_64 in _dynsym_tables(image):
        symbol_size = 24 if is_64 else 16
        name_offsets = set()
        start = strtab.find(name + b"\0")
        while start >= 0:                                   # suffix-merged strings may share a tail
            name_offsets.add(start)
            start = strtab.find(name + b"\0", start + 1)
        if not name_offsets:
            return False
        for offset in range(sh_offset, sh_offset + sh_size, symbol_size):
            st_name, = struct.unpack_from(endian + "I", image, offset)
            if st_name not in name_offsets:
                continue
            if is_64:
                st_info, _, st_shndx = struct.unpack_from(endian + "BBH", image, offset + 4)
            else:
                st_info, _, st_shndx = struct.unpack_from(endian + "BBH", image, offset + 12)
            if st_shndx != 0 and (st_info >> 4) in (1, 2):  # defined, STB_GLOBAL or STB_WEAK
                return True
    return False


STB_GLOBAL, STB_WEAK = 1, 2                 # an ELF symbol's binding (st_info >> 4)


def defined_symbols(path: Path | str, bindings: tuple[int, ...] = (STB_GLOBAL, STB_WEAK)) -> frozenset[str]:
    """The names of every dynamic symbol of a binding in ``bindings`` (global or weak) the ELF shared library at
    ``path`` defines (section index not SHN_UNDEF), read without loading it; empty when it cannot be read. Each
    binding of a file is read once per process (``_binding_names``, keyed on the path and what tells a rebuilt file:
    device, inode, size, mtime, ctime): ``linkage.taking`` with a preload asks the toolkit's libraries for both
    bindings (``interposers``), then for the strong ones (``bound_ahead``), a second read of 10^5 names each."""
    stamp = _file_version(path)
    if stamp is None:
        return frozenset()
    found = [_binding_names(os.fspath(path), stamp, binding) for binding in bindings]
    return found[0] if len(found) == 1 else frozenset().union(*found)


def _file_version(path: Path | str) -> tuple[int, ...] | None:
    """What tells one version of the file at ``path`` from a rebuild at the same path (device, inode, size,
    mtime_ns, ctime_ns): the key of ``_binding_names``' and ``_relocated_names``' caches; None when it cannot be
    read."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def bound_by_name(path: Path | str) -> frozenset[str]:
    """The names of the dynamic symbols the ELF shared library at ``path`` has dynamic relocations against (the
    ``SHT_RELA``/``SHT_REL`` sections of its ``.dynsym``: its PLT and GOT entries): those the dynamic linker binds for
    it by name, to their first definition in the process's global scope, a preloaded library's before any other. A
    call to a function of its own bound when it was linked (``-Bsymbolic-functions``, hidden or protected
    visibility) has no relocation, and no library ahead of it takes it. Read without loading it, once per version of
    the file (``_relocated_names``); empty when it cannot be read."""
    stamp = _file_version(path)
    return frozenset() if stamp is None else _relocated_names(os.fspath(path), stamp)


@functools.lru_cache(maxsize=256)
def _relocated_names(path: str, stamp: tuple[int, ...]) -> frozenset[str]:
    """``bound_by_name`` of the file at ``path``, whose version ``stamp`` (device, inode, size, mtime_ns, ctime_ns)
    keys the cache: each relocation's symbol index (``r_info >> 32``, or ``>> 8`` in a 32-bit file), named by the
    ``.dynsym`` section the relocation section links to."""
    import numpy as np

    names: set[str] = set()
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as image:
            endian, is_64, sections = _sections(image)
            word = endian + ("u8" if is_64 else "u4")
            for section in sections:
                sh_type, sh_offset, sh_size, sh_link = section[1], section[4], section[5], section[6]
                if sh_type not in (SHT_RELA, SHT_REL) or not 0 < sh_link < len(sections) \
                        or sections[sh_link][1] != SHT_DYNSYM:
                    continue
                fields = 3 if sh_type == SHT_RELA else 2                  # offset, info (, addend)
                entries = np.frombuffer(image, word, sh_size // (fields * (8 if is_64 else 4)) * fields, sh_offset)
                indices = np.unique(entries[1::fields] >> (32 if is_64 else 8))
                del entries                                               # the mmap closes only with no view left
                symbols, size = sections[sh_link], 24 if is_64 else 16
                strtab = sections[symbols[6]]
                for index in indices[indices > 0].tolist():
                    st_name, = struct.unpack_from(endian + "I", image, symbols[4] + index * size)
                    start = strtab[4] + st_name
                    names.add(image[start:image.find(b"\0", start)].decode(errors="replace"))
    except (OSError, ValueError, struct.error, IndexError):
        return frozenset()
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def _binding_names(path: str, stamp: tuple[int, ...], binding: int) -> frozenset[str]:
    """The names of the dynamic symbols of ``binding`` (``st_info >> 4``) the ELF file at ``path`` defines;
    ``stamp`` (device, inode, size, mtime_ns, ctime_ns) keys the cache to the file's version. Empty when unreadable."""
    import numpy as np

    names: set[str] = set()
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as image:
            for sh_offset, sh_size, strtab, endian, is_64 in _dynsym_tables(image):
                layout = [("name", "u4"), ("info", "u1"), ("other", "u1"), ("shndx", "u2"), ("value", "u8"),
                          ("size", "u8")] if is_64 else \
                    [("name", "u4"), ("value", "u4"), ("size", "u4"), ("info", "u1"), ("other", "u1"), ("shndx", "u2")]
                dtype = np.dtype([(field, endian + kind) for field, kind in layout])
                table = np.frombuffer(image, dtype, sh_size // dtype.itemsize, sh_offset)
                defined = table["name"][(table["shndx"] != 0) & (table["info"] >> 4 == binding)].tolist()
                del table                                   # the mmap closes only with no view of it left
                names.update(strtab[offset:strtab.index(b"\0", offset)].decode(errors="replace") for offset in defined)
    except (OSError, ValueError, struct.error, IndexError):
        return frozenset()
    return frozenset(names)
