"""``file:`` inputs: .npy files inside the case file's folder, checked from a bounded header read.

A ``file:`` input names a .npy file relative to its case file. It must stay inside that case file's
folder once symlinks are resolved (``resolve``), be a regular file (``files.open_regular``: never a
FIFO or a device), and hold a plain numeric array (booleans, integers, floats; no Python objects,
strings or records) whose element count is the tensor's and whose data fill the file exactly. The
header is read at most ``MAX_HEADER_BYTES`` and parsed with ``ast.literal_eval`` only; an element
count that would overflow int64 is refused before anything is allocated. ``load`` applies the same
rules again when the run reads the data, since a file may change between loading and running.

Every refusal is an ``NpyError`` whose reason names the file (never its bytes); callers add the case
and the field.
"""

from __future__ import annotations

import ast
import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import files
from ..dtypes import INT64_MAX
from ..errors import PrmgError
from ..results import plural

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 64 * 1024


class NpyError(Exception):
    """A .npy file that cannot be used; the message says why, naming the file."""


class CountMismatch(NpyError):
    """A .npy file holding another number of elements than the tensor has."""

    def __init__(self, message: str, shape: tuple[int, ...], count: int):
        super().__init__(message)
        self.shape = shape
        self.count = count


@dataclass(frozen=True)
class Header:
    """What a .npy header says: the array's shape and dtype, its order, and where its data start."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int

    @property
    def count(self) -> int:
        """The number of elements."""
        count = 1
        for dim in self.shape:
            count *= dim
        return count


def resolve(value: str, folder: str | Path | None) -> str:
    """The absolute path a ``file:`` input names: ``value`` relative to ``folder``, symlinks resolved;
    NpyError when it leaves ``folder`` (no folder: any path)."""
    candidate = os.path.join(folder, value) if folder is not None else value
    try:
        real = os.path.realpath(candidate)
    except (ValueError, OSError):
        raise NpyError(f"{value!r} is not a usable path") from None
    if folder is not None and not files.inside(real, folder):
        raise NpyError(f"{real} is outside the case file's folder {os.path.realpath(folder)} "
                       f"(file: inputs must stay inside it)")
    return real


def check(path: str, count: int, folder: str | Path | None = None) -> Header:
    """The header of the .npy file ``path`` after checking it holds ``count`` plain numbers that fill
    the file exactly (and, with ``folder``, that it lies inside ``folder``)."""
    fd = _open(path, folder)
    try:
        header = _read_header(fd, path)
        _check_header(header, os.fstat(fd).st_size, count, path)
        return header
    finally:
        os.close(fd)


def load(path: str, count: int, folder: str | Path | None = None) -> np.ndarray:
    """The array in the .npy file ``path`` (checked as ``check`` does), in its own shape and dtype.

    Reads the header and exactly the data it describes; nothing is unpickled."""
    fd = _open(path, folder)
    try:
        header = _read_header(fd, path)
        _check_header(header, os.fstat(fd).st_size, count, path)
        nbytes = header.count * header.dtype.itemsize
        try:
            data = files.read_at_most(fd, nbytes)
        except OSError as error:
            raise NpyError(f"cannot read {path}: {files.os_reason(error)}") from None
    finally:
        os.close(fd)
    if len(data) != nbytes:
        raise NpyError(f"{path} is shorter than its header says (truncated?)")
    flat = np.frombuffer(data, dtype=header.dtype, count=header.count)
    if header.fortran_order:
        return flat.reshape(header.shape[::-1]).transpose()
    return flat.reshape(header.shape)


def digest(path: str, folder: str | Path | None = None) -> str:
    """The sha256 (hex) of the bytes of the regular file ``path`` (inside ``folder`` when given)."""
    fd = _open(path, folder)
    try:
        hasher = hashlib.sha256()
        while True:
            chunk = os.read(fd, 8 * files.MiB)
            if not chunk:
                return hasher.hexdigest()
            hasher.update(chunk)
    except OSError as error:
        raise NpyError(f"cannot read {path}: {files.os_reason(error)}") from None
    finally:
        os.close(fd)


def _open(path: str, folder) -> int:
    """A read-only fd of the regular file ``path`` (inside ``folder`` when given)."""
    if folder is not None and not files.inside(path, folder):
        raise NpyError(f"{path} is outside the case file's folder {os.path.realpath(folder)} "
                       f"(file: inputs must stay inside it)")
    try:
        return files.open_regular(path)
    except PrmgError as error:
        joiner = " " if error.reason.startswith("is ") else ": "
        raise NpyError(f"{path}{joiner}{error.reason}") from None


def _read_exactly(fd: int, count: int, path: str) -> bytes:
    """``count`` bytes of the header; NpyError when the file ends first."""
    try:
        data = files.read_at_most(fd, count)
    except OSError as error:
        raise NpyError(f"cannot read {path}: {files.os_reason(error)}") from None
    if len(data) != count:
        raise NpyError(f"{path} is not a .npy file (it ends inside the header)")
    return data


def _read_header(fd: int, path: str) -> Header:
    """The header at the start of ``fd``: magic, version, length (at most MAX_HEADER_BYTES), dict."""
    start = _read_exactly(fd, len(MAGIC) + 2, path)
    if start[:len(MAGIC)] != MAGIC:
        raise NpyError(f"{path} is not a .npy file (it does not start with the NUMPY magic)")
    major = start[len(MAGIC)]
    if major not in (1, 2, 3):
        raise NpyError(f"{path} is a .npy file of unknown version {major}")
    size_format = "<H" if major == 1 else "<I"
    (length,) = struct.unpack(size_format, _read_exactly(fd, struct.calcsize(size_format), path))
    if length > MAX_HEADER_BYTES:
        raise NpyError(f"{path} has a .npy header of {length} bytes, over {MAX_HEADER_BYTES}")
    text = _read_exactly(fd, length, path).decode("latin1" if major < 3 else "utf-8", errors="replace")
    try:
        fields = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise NpyError(f"{path} has a .npy header that is not a Python dict literal") from None
    if not isinstance(fields, dict) or set(fields) != {"descr", "fortran_order", "shape"}:
        raise NpyError(f"{path} has a .npy header without exactly descr, fortran_order and shape")
    shape = fields["shape"]
    if not (isinstance(shape, tuple) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                             for d in shape)):
        raise NpyError(f"{path} has a .npy header whose shape is not a tuple of sizes >= 0")
    count = 1
    for dim in shape:
        count *= dim
        if dim > INT64_MAX or count > INT64_MAX:
            raise NpyError(f"{path} has a shape whose element count overflows int64")
    if not isinstance(fields["fortran_order"], bool):
        raise NpyError(f"{path} has a .npy header whose fortran_order is not true or false")
    try:
        dtype = np.lib.format.descr_to_dtype(fields["descr"])
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, MemoryError, RecursionError):
        raise NpyError(f"{path} has a .npy header with an unknown dtype") from None
    return Header(shape, dtype, fields["fortran_order"], len(MAGIC) + 2 + struct.calcsize(size_format) + length)


def _check_header(header: Header, file_size: int, count: int, path: str) -> None:
    """NpyError unless the header describes ``count`` plain numbers whose data fill ``file_size``."""
    if header.dtype.hasobject:
        raise NpyError(f"{path} holds Python objects (pickles are refused)")
    if header.dtype.kind not in "biuf" or header.dtype.fields is not None:
        raise NpyError(f"{path} holds {header.dtype} data, not numbers")
    if header.count != count:
        raise CountMismatch(f"{path} holds {plural(header.count, 'element')} {header.shape}; the tensor has {count}",
                            header.shape, header.count)
    expected = header.data_offset + header.count * header.dtype.itemsize
    if file_size != expected:
        how = "shorter" if file_size < expected else "longer"
        raise NpyError(f"{path} is {plural(file_size, 'byte')}, {how} than the {expected} its header describes")
