"""Reports of a run: a tabulate table for people; JSON, JUnit XML, CSV and Markdown for machines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class CaseResult:
    """The record of one case, as reports and the results file (JSON lines) hold it.

    status: "passed" | "failed" | "error" | "skipped".
    error_code: the status the operator returned (None when it was not called).
    """

    name: str
    status: str
    message: str = ""
    error_code: int | None = None
    metrics: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    kernel_ms: float | None = None
    duration_s: float = 0.0
    source: str = ""
    dtype: str = ""
    cos_dtype: str = ""
    shape: list = field(default_factory=list)
    cos_shape: list = field(default_factory=list)
    rotary_mode: str = ""
    partial_slice: list = field(default_factory=list)
    standard: str = ""
    tags: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CaseResult":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class RunInfo:
    """What the report header says about the run."""

    runner: str                 # "aclnn" | "emulator"
    location: str               # toolkit root (or emulator build folder)
    op_library: str = ""        # the library the operator was resolved from
    supported_modes: tuple = (1,)
    devices: tuple = (0,)
    standard: str = "default"
    version: str = ""
