"""What a case's expectation depends on besides the case: the chip the operator runs on and the upstream build of
the operator library.

**Chips.** ``aclrtGetSocName`` names the chip (``Ascend950PR_9589``, ``Ascend910B2``, ``Ascend910_9391`` ...);
its op-definition family (``soc_family``) is, as opbase's ``OpKernelLib::GetSocPath`` finds the kernels' folder, its
``SOC_NAMES`` entry when the whole name is one, else the ``SOC_FAMILIES`` entry of the longest prefix of the name. An
operator runs only on the families its op definition lists (``OperatorSpec.socs``, ``constraints.check_chip``;
ops-transformer's ``op_host/*_def.cpp`` ``AddConfig``): the grad on ascend950 and ascend960dt, the forward also on
ascend350 and on the A2/A3 chips (ascend910b, ascend910_93), where its tiling has other rules (``ops/forward.py``).
A case's ``expect`` is written for the 950 (``REFERENCE_SOC``); on another chip whose rules predict another status
for it, the chip's prediction is what the case is judged by (``constraints.on_chip``).

**Builds.** ``BUILDS`` are the upstream commits that changed what an operator returns, oldest first. A case whose
expectation holds only for some of them says so (``builds: [...]``); prmg reads the toolkit's stated version
(``provenance.toolkit_version``) and maps it to a build through ``RELEASES`` (no CANN release ships the grad yet:
the table is empty, so every real toolkit's build is unknown). On a toolkit whose build is unknown or not among
the case's, a case refused or accepted against its expectation as some build does (``constraints.build_outcomes``)
is reported as depending on the toolkit build (``xfailed`` with that message, ``build_dependent``), not as a plain
failure; a status no build gives is one.
"""

from __future__ import annotations

from dataclasses import dataclass


# aclrtGetSocName prefix -> op-definition family (AddConfig names); the longest matching prefix wins. Ascend910_95 is
# the 950's other name (opbase's socOpMapV2 and SocVersion::ASCEND950 = ASCEND910_95; GE's DEV_TYPE_950).
SOC_FAMILIES = {"Ascend950": "ascend950", "Ascend910_95": "ascend950", "Ascend960": "ascend960dt",
                "Ascend350": "ascend350", "Ascend910B": "ascend910b", "Ascend910_93": "ascend910_93"}
# Whole names a prefix above would misfile: "Ascend910B" (no digit) is an A1 chip, an Ascend 910 as Ascend910A and
# Ascend910ProB are, not an A2 Ascend910B1..B4: opbase's socOpMap files its kernels under ascend910/ (hicann/opbase
# op_kernel_lib.cpp; GE's IsSocVersion910 and DEV_TYPE_910 agree), a family neither operator's op definition lists.
SOC_NAMES = {"Ascend910B": "ascend910"}
REFERENCE_SOC = "ascend950"           # the chip case files' expectations are written for
ASCEND = "Ascend"                     # every Ascend chip's name starts so (another name: a runner without a chip)
MEMBASE_SOCS = frozenset({"ascend910b", "ascend910_93"})     # A2, A3: the forward's membase tiling

# The upstream builds (ops-transformer commits) whose operators return different statuses, oldest first.
BUILDS = {
    "base": "before e9f0541c (4007a71b): no early no-op; an empty slice skips only the slice-length rules, meets "
            "every other one, then does nothing; an empty cos/sin breaks the dims > 0 rule (561002)",
    "e9f0541c": "the grad's empty slice or empty dy/cos/sin is a no-op, returned before the slice-range check",
    "2b888cdb": "the grad checks the slice range before that no-op: an empty slice outside [0, D] is refused",
}
LATEST_BUILD = tuple(BUILDS)[-1]        # what the constraint model and the emulator follow by default
# A toolkit's stated version (its start) -> the build its operator library holds. No CANN release ships the grad
# yet (it is on upstream's master only, not in the 9.0.0 and 9.1.0 branches): every real toolkit's build is unknown.
RELEASES: dict[str, str] = {}


@dataclass(frozen=True)
class Target:
    """Where a case runs: the chip's name (``aclrtGetSocName``, "" when the runtime cannot say) and the toolkit's
    stated version ("" when it states none)."""

    soc_name: str = ""
    version: str = ""

    @property
    def soc(self) -> str | None:
        """The chip's op-definition family (``soc_family``); None when unknown."""
        return soc_family(self.soc_name)

    @property
    def build(self) -> str | None:
        """The build the toolkit's version maps to (``build_of``); None when unknown."""
        return build_of(self.version)

    def describe_build(self) -> str:
        """``version 8.5.0 (build unknown)`` or ``version X (build 2b888cdb)``."""
        stated = f"version {self.version}" if self.version else "no version"
        return f"{stated} ({'build ' + self.build if self.build else 'build unknown'})"


def soc_family(name: str) -> str | None:
    """The op-definition family of chip ``name`` (its ``SOC_NAMES`` entry, else the ``SOC_FAMILIES`` entry of its
    longest prefix); None for "" or a chip no entry names."""
    if name in SOC_NAMES:
        return SOC_NAMES[name]
    prefixes = [prefix for prefix in SOC_FAMILIES if name.startswith(prefix)]
    return SOC_FAMILIES[max(prefixes, key=len)] if prefixes else None


def build_of(version: str) -> str | None:
    """The build a toolkit of stated ``version`` holds (``RELEASES``, longest matching start), None when unknown."""
    starts = [start for start in RELEASES if version and version.startswith(start)]
    return RELEASES[max(starts, key=len)] if starts else None


def rules_soc(soc: str | None) -> str:
    """The family whose rules the constraint model applies on chip family ``soc``: its own, the reference's
    when unknown."""
    return soc or REFERENCE_SOC
