"""Where and when a run happened: host, start time, the toolkit's and the driver's versions as their
install files state them, and a stamp of each library that tells a rebuild at the same path.

A CANN toolkit states its version in ``<root>/version.cfg`` (``toolkit_installed_version=[...]`` or
``Version=...`` lines) and in ``<root>/<arch>-linux/ascend_toolkit_install.info`` (``version=8.0.RC2``);
the driver in ``/usr/local/Ascend/driver/version.info`` (``Version=24.1.rc2``). The first version found is
reported; a missing or unreadable file is simply not there (never an error).
"""

from __future__ import annotations

import datetime
import os
import re
import socket
from pathlib import Path

DRIVER_INFO = Path("/usr/local/Ascend/driver/version.info")
_VERSION_LINE = re.compile(r"^\s*(?:version|Version|toolkit_installed_version|runtime_running_version)\s*=\s*"
                           r"\[?\s*([^\]\s#]+)", re.MULTILINE)
_MAX_BYTES = 64 << 10


def _read_version(path: Path) -> str:
    """The first ``version=...`` value of a small text file, or ""."""
    try:
        if not os.path.isfile(path) or path.stat().st_size > _MAX_BYTES:
            return ""
        match = _VERSION_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    return match.group(1).split(":")[-1] if match else ""


def toolkit_version(root) -> str:
    """The toolkit's version from its install files under ``root`` (module docstring), or ""."""
    root = Path(root)
    candidates = [root / "version.cfg", *sorted(root.glob("*-linux/ascend_toolkit_install.info")),
                  root / "ascend_toolkit_install.info"]
    return next((version for version in map(_read_version, candidates) if version), "")


def driver_version(path: Path = DRIVER_INFO) -> str:
    """The NPU driver's version from its ``version.info``, or ""."""
    return _read_version(path)


def library_stamp(path) -> list:
    """What tells a rebuilt library from the one recorded, without reading it: ``[size, mtime_ns, ctime_ns,
    inode]`` of the file ``path`` (a rebuild at the same path changes them; ``touch`` cannot set ctime), or
    ``["missing"]``."""
    try:
        info = Path(path).stat()
    except (OSError, ValueError):
        return ["missing"]
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def host_name() -> str:
    """This machine's host name."""
    return socket.gethostname()


def now() -> str:
    """The current time in ISO 8601 with the UTC offset, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds")
