"""Where and when a run happened: host, start time, the toolkit's and the driver's versions as their
install files state them, a stamp of each library that tells a rebuild at the same path, and a fingerprint of the
operator's kernel and tiling files under the opp path (``opp_stamp``).

A CANN toolkit states its version in ``<root>/version.cfg`` (``toolkit_installed_version=[...]`` or
``Version=...`` lines) and in ``<root>/<arch>-linux/ascend_toolkit_install.info`` (``version=8.0.RC2``);
the driver in its folder's ``version.info`` (``Version=24.1.rc2``), the folder being where the driver library this
process mapped lies, else where CANN's installers recorded the driver, else ``/usr/local/Ascend/driver``
(``driver_folders``). The first version found is reported; a missing or unreadable file is simply not there (never
an error).
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import socket
import stat
from pathlib import Path
from typing import Iterable

from ..errors import PrmgError

# The NPU driver: the library of it the runtime loads (from LD_LIBRARY_PATH: ``<driver>/lib64/driver``), the file
# where CANN's installers and set_env.sh read the driver's install path (``Driver_Install_Path_Param``, to which
# ``driver`` is added: a driver installed with ``--install-path``), and where it is by default.
HAL_NAME = "libascend_hal.so"
INSTALL_INFO = Path("/etc/ascend_install.info")
DEFAULT_DRIVER = Path("/usr/local/Ascend/driver")
_VERSION_LINE = re.compile(r"^\s*(?:version|Version|toolkit_installed_version|runtime_running_version)\s*=\s*"
                           r"\[?\s*([^\]\s#]+)", re.MULTILINE)
_MAX_BYTES = 64 << 10


def _small_text(path: Path) -> str:
    """The text of ``path`` when it is a regular file of at most ``_MAX_BYTES``, else "" (never an error)."""
    try:
        if not os.path.isfile(path) or path.stat().st_size > _MAX_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def _read_version(path: Path) -> str:
    """The first ``version=...`` value of a small text file, or ""."""
    match = _VERSION_LINE.search(_small_text(path))
    return match.group(1).split(":")[-1] if match else ""


def toolkit_version(root) -> str:
    """The toolkit's version from its install files under ``root`` (module docstring), or ""."""
    root = Path(root)
    candidates = [root / "version.cfg", *sorted(root.glob("*-linux/ascend_toolkit_install.info")),
                  root / "ascend_toolkit_install.info"]
    return next((version for version in map(_read_version, candidates) if version), "")


def driver_folders(maps: str = "/proc/self/maps", install_info: Path = INSTALL_INFO) -> list[Path]:
    """Where the NPU driver may be, in the order it is looked for: the folder of the driver library this process
    mapped (``HAL_NAME``, not a stub: the runtime opened it) and the two above it (``<driver>/lib64/driver``), then
    ``<Driver_Install_Path_Param>/driver`` of ``install_info`` (CANN's installers record a driver installed
    elsewhere there), then ``DEFAULT_DRIVER``."""
    from .linkage import mapped_libraries
    from .toolkit import is_stub_path

    mapped = next((Path(path) for path in mapped_libraries(maps)
                   if os.path.basename(path) == HAL_NAME and not is_stub_path(path)), None)
    places = list(mapped.parents[:3]) if mapped else []
    recorded = re.search(r"^\s*driver_install_path_param\s*=\s*(\S.*?)\s*$", _small_text(install_info),
                         re.IGNORECASE | re.MULTILINE)
    return places + ([Path(recorded[1]) / "driver"] if recorded else []) + [DEFAULT_DRIVER]


def driver_version(maps: str = "/proc/self/maps", install_info: Path = INSTALL_INFO) -> str:
    """The NPU driver's version: that of the first ``version.info`` of ``driver_folders``, or ""."""
    return next((version for version in (_read_version(folder / "version.info")
                                         for folder in driver_folders(maps, install_info)) if version), "")


def library_stamp(path) -> list:
    """What tells a rebuilt library from the one recorded, without reading it: ``[size, mtime_ns, ctime_ns,
    inode]`` of the file ``path`` (a rebuild at the same path changes them; ``touch`` cannot set ctime), or
    ``["missing"]``."""
    try:
        info = Path(path).stat()
    except (OSError, ValueError):
        return ["missing"]
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


# Where, under an opp folder (the built-in one, each vendor's, each ASCEND_CUSTOM_OPP_PATH entry), the toolkit finds
# an operator's kernel binaries (``<soc>/<op>/...`` and ``config/<soc>/<op>.json``: only the entries whose name names
# the operator are stamped) and the libraries of its tiling, host code and aclnn layer (every shared library).
KERNEL_FOLDER = ("op_impl", "ai_core", "tbe", "kernel")
LIBRARY_FOLDERS = (("op_impl", "ai_core", "tbe", "op_tiling"), ("op_impl", "ai_core", "tbe", "op_host"),
                   ("op_api", "lib"))
MAX_STAMPED_FILES = 20000          # more files than that are counted but not stamped (the fingerprint says so)


def _opp_bases(opp: Path, custom: str) -> list[Path]:
    """The folders a toolkit loads operators from: each ``ASCEND_CUSTOM_OPP_PATH`` entry, each vendor under
    ``opp/vendors``, ``opp/built-in`` (which exist); the entries as written, as the toolkit reads them
    (``toolkit.custom_opp_entries``)."""
    from .toolkit import custom_opp_entries

    bases = [Path(entry) for entry in custom_opp_entries(custom)] + _folders(opp / "vendors") + [opp / "built-in"]
    return [base for base in bases if _is_folder(base)]


def _is_folder(path: Path) -> bool:
    """True when ``path`` is a folder (through links); False for anything that cannot be looked at: a name over
    255 bytes or a link loop too (``Path.is_dir`` raises on those). The stamp is a fingerprint, not a check."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _files_under(folder: Path) -> Iterable[Path]:
    """Every file below ``folder`` (links to files included), folder links followed (a kernel's ``bin`` linked to a
    build's output), each folder walked once, by the first path reaching it (a link back to a folder above ends
    there), at most ``MAX_STAMPED_FILES`` folders, in a set order."""
    walked: set[tuple[int, int]] = set()
    for top, folders, names in os.walk(folder, followlinks=True):
        try:
            info = os.stat(top)
        except OSError:
            folders.clear()
            continue
        if (info.st_dev, info.st_ino) in walked or len(walked) >= MAX_STAMPED_FILES:
            folders.clear()
            continue
        walked.add((info.st_dev, info.st_ino))
        folders.sort()
        for name in sorted(names):
            yield Path(top) / name


def _folders(folder: Path) -> list[Path]:
    """The folders right under ``folder``, sorted ([] when it is none, or cannot be listed)."""
    return sorted(path for path in _entries(folder) if _is_folder(path))


def _entries(folder: Path) -> list[Path]:
    """What ``folder`` holds, sorted ([] when it cannot be listed)."""
    try:
        return sorted(folder.iterdir())
    except (OSError, ValueError):
        return []


def _kernel_entries(base: Path, keys: tuple[str, ...]) -> Iterable[Path]:
    """The entries of ``base``'s ``kernel/<soc>/`` and ``kernel/config/<soc>/`` naming an operator of ``keys`` (a name
    that, lower-cased without ``_``, holds one of them: ``inplace_partial_rotary_mul_grad``)."""
    kernel = base.joinpath(*KERNEL_FOLDER)
    for soc in _folders(kernel) + _folders(kernel / "config"):
        yield from (entry for entry in _entries(soc) if any(key in entry.name.lower().replace("_", "") for key in keys))


def _operator_files(opp: Path, custom: str, titles: Iterable[str]) -> Iterable[Path]:
    """The files of ``opp_stamp``: below each base, those of the kernel entries naming an operator of ``titles``
    (``_kernel_entries``) and every shared library of the tiling, host and aclnn folders."""
    keys = tuple(title.lower() for title in titles)
    for base in _opp_bases(opp, custom):
        for entry in _kernel_entries(base, keys):
            yield from _files_under(entry) if _is_folder(entry) else (entry,)
        for parts in LIBRARY_FOLDERS:
            yield from (path for path in _files_under(base.joinpath(*parts)) if ".so" in path.name)


def opp_stamp(opp: Path, custom: str, titles: Iterable[str]) -> dict:
    """What tells the kernel and tiling the toolkit would load for the operators ``titles`` from the opp folder
    ``opp`` (and the ``ASCEND_CUSTOM_OPP_PATH`` entries ``custom``) from others, without reading a file: ``files``,
    how many there are (``_operator_files``), ``fingerprint``, the first 16 hex digits of the sha256 of the vendors'
    order (``load_priority`` of ``opp/vendors/config.ini``: the first vendor holding a kernel is taken) and of each
    file's (path with links resolved, size, mtime_ns, ctime_ns, inode) in order (the same files reached through a
    link to the opp folder or a custom package are the same fingerprint; a rebuild or reinstall here changes it, and
    so does a binary written over in place with its size and time kept: ``touch`` cannot set ctime), and
    ``portable``, the same of the order and each file's (path below ``opp``, else resolved, size, mtime_ns): equal on
    two hosts that installed the same packages."""
    from .toolkit import config_vendors

    local, portable, count, opp = hashlib.sha256(), hashlib.sha256(), 0, Path(opp)
    vendors = config_vendors(opp)
    if vendors:
        order = f"load_priority\0{','.join(vendors)}\n".encode(errors="replace")
        local.update(order)
        portable.update(order)
    for path in _operator_files(opp, custom, titles):
        count += 1
        if count > MAX_STAMPED_FILES:
            continue
        try:
            info = path.stat()
        except OSError:
            continue
        real = os.path.realpath(path)
        inside = os.path.relpath(path, opp) if path.is_relative_to(opp) else real
        local.update(f"{real}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n"
                     .encode(errors="replace"))
        portable.update(f"{inside}\0{info.st_size}\0{info.st_mtime_ns}\n".encode(errors="replace"))
    return {"files": count, "fingerprint": local.hexdigest()[:16], "portable": portable.hexdigest()[:16]}


def kernel_places(opp: Path, custom: str, titles: Iterable[str]) -> list[str]:
    """Where the kernel binaries of the operators ``titles`` are (``_kernel_entries``), in the order the toolkit takes
    them, the first holding one winning: each ``ASCEND_CUSTOM_OPP_PATH`` entry (its path), each vendor of
    ``load_priority`` in ``opp/vendors/config.ini`` (``vendors/NAME``), ``built-in``. A stale vendor package left
    installed thus shows as the kernels' source above the build under test."""
    from .toolkit import config_vendors

    keys = tuple(title.lower() for title in titles)
    places = [(entry, Path(entry)) for entry in custom.split(":") if entry]
    places += [(f"vendors/{vendor}", Path(opp) / "vendors" / vendor) for vendor in config_vendors(Path(opp))]
    places.append(("built-in", Path(opp) / "built-in"))
    return [label for label, base in places if _is_folder(base) and next(_kernel_entries(base, keys), None)]


def operator_files(toolkit) -> dict:
    """The ``results.RunInfo`` fields of where the operators' kernels and tiling come from for ``toolkit`` on this host
    (``OPP_FIELDS``): its opp folder (``toolkit.opp_path``), the ``opp_stamp`` of their files there with
    ``ASCEND_CUSTOM_OPP_PATH``'s, and ``kernel_places``."""
    from ..ops import OPERATORS
    from .toolkit import opp_path

    opp, custom, titles = opp_path(toolkit), os.environ.get("ASCEND_CUSTOM_OPP_PATH", ""), \
        [spec.title for spec in OPERATORS.values()]
    stamp = opp_stamp(opp, custom, titles)
    return {"opp": str(opp), "opp_files": stamp["files"], "opp_fingerprint": stamp["fingerprint"],
            "opp_portable": stamp["portable"], "opp_kernels": tuple(kernel_places(opp, custom, titles))}


OPP_FIELDS = ("opp", "opp_files", "opp_fingerprint", "opp_portable", "opp_kernels")
LIBRARY_ROLES = ("runtime", "nnopbase", "op", "geir")     # a toolkit's libraries (``Toolkit.<role>_lib``)


def library_stamps(toolkit) -> dict:
    """``library_stamp`` of each library of ``toolkit``, by role (``LIBRARY_ROLES``; those it has)."""
    return {role: library_stamp(getattr(toolkit, f"{role}_lib"))
            for role in LIBRARY_ROLES if getattr(toolkit, f"{role}_lib")}


def portable_stamp(stamp):
    """A ``library_stamp`` as two hosts that installed the same package have it: its size and mtime (``["missing"]``
    as it is)."""
    return stamp[:2] if isinstance(stamp, list) else stamp


def portable_stamps(toolkit) -> dict:
    """``portable_stamp`` of each of ``library_stamps``: what the nodes of a ``--cluster`` run must have alike."""
    return {role: portable_stamp(stamp) for role, stamp in library_stamps(toolkit).items()}


def resolved(path) -> str:
    """``path`` with links resolved (``os.path.realpath``; "" for none): how a run's settings key a toolkit's folder,
    library or opp folder, so that the same one named through a link (``ascend-toolkit/latest``, CANN's layout) and
    through the folder it names is one setting, and the link pointed elsewhere another."""
    return os.path.realpath(path) if path else ""


def resolved_places(opp: str, custom: str) -> dict:
    """The opp folder ``opp`` and the ``ASCEND_CUSTOM_OPP_PATH`` value ``custom`` as a run's settings key them: links
    resolved (``os.path.realpath``; each custom entry, as the toolkit reads it: ``toolkit.custom_opp_entries``), so
    that the same folders named through a link (``.../latest/opp``) are the same settings, and a link pointed
    elsewhere (or a relative entry read from another folder) is another."""
    from .toolkit import custom_opp_entries

    return {"path": resolved(opp), "custom": ":".join(resolved(entry) for entry in custom_opp_entries(custom))}


def toolkit_stamp(toolkit) -> dict:
    """What tells the build of ``toolkit`` a run loads on this host from another, in the shape of a run record's
    settings (``run_record.recorded_settings``): ``libraries`` (``library_stamps``) and ``opp`` (the opp folder, and the
    count and fingerprint of ``operator_files``)."""
    files = operator_files(toolkit)
    return {"libraries": library_stamps(toolkit),
            "opp": {"path": resolved(files["opp"]), "files": files["opp_files"],
                    "fingerprint": files["opp_fingerprint"]}}


def toolkit_changes(before: dict, toolkit) -> list[str]:
    """What of ``toolkit``'s files on this host differs now from ``before`` (``toolkit_stamp``'s shape: a run record's
    settings, or a stamp): each library whose stamp changed, and the operator's kernel and tiling files: a toolkit
    reinstalled or a kernel rebuilt while the cases ran (a shared host) ran some on each build."""
    return differences(before, toolkit_stamp(toolkit), toolkit)


def differences(before: dict, now: dict, toolkit) -> list[str]:
    """What differs between two ``toolkit_stamp``s of ``toolkit`` (``before`` may be a run record's settings), as
    ``toolkit_changes`` names it."""
    changed = [f"{role} library {getattr(toolkit, f'{role}_lib')}" for role, stamp in now["libraries"].items()
               if stamp != before.get("libraries", {}).get(role)]
    opp = before.get("opp", {})
    if any(now["opp"][key] != opp.get(key) for key in now["opp"]):
        changed.append(f"the operator's kernel and tiling files under {now['opp']['path']}")
    return changed


HOST_VARIABLE = "PRMG_HOST"      # the host label a run records in place of this machine's host name


def host_label(text: str, source: str) -> str:
    """``text`` when it is a host label, a word (``fields.is_word``: ASCII letters, digits, ``_.-``, one line, at most
    ``fields.MAX_NAME_LENGTH``, never the ``/`` of a chip's label ``HOST/3`` nor the ``:`` and ``,`` of ``--chips
    HOST:0-7,...``); PrmgError naming ``source`` (``PRMG_HOST``, ``--chips``) otherwise."""
    from ..cases.fields import WORD, is_word, show

    if not is_word(text):
        raise PrmgError(f"{source}: {show(text)} is no host label ({WORD})")
    return text


def host_name(environ=os.environ) -> str:
    """The host a run records (its run record's ``host``: the reports' header, the label ``prmg report`` gives its
    chips, what ``--chips HOST:0-7`` names): ``$PRMG_HOST`` when set (``host_label``: a CI job in a container, whose
    host name is the container's, names the machine it runs on), else this machine's host name."""
    if HOST_VARIABLE in environ:
        return host_label(environ[HOST_VARIABLE], HOST_VARIABLE)
    return socket.gethostname()


BOOT_ID = "/proc/sys/kernel/random/boot_id"     # the running kernel's id, new at each boot (Linux)


def machine() -> tuple[str, str]:
    """This machine's host name and its kernel's boot id (``BOOT_ID``; "" where there is none), which a run records
    beside its ``host_name``: ``prmg report`` tells two machines that recorded one host label (``PRMG_HOST`` set alike,
    a host name two share) apart by the boot id, which the containers of one machine share whatever their host names
    (a kernel's, not a namespace's)."""
    try:
        with open(BOOT_ID, encoding="ascii", errors="replace") as file:
            boot = file.read(64).strip()
    except OSError:
        boot = ""
    return socket.gethostname(), boot


def now() -> str:
    """The current time in ISO 8601 with the UTC offset, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds")
