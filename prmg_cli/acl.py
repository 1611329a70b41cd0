"""The ctypes binding to an installed CANN toolkit (or the host emulator, which has the same ABI)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Outcome:
    """What one launch produced, read back from the device.

    status: 0, or the first non-zero aclnnStatus (from GetWorkspaceSize or the launch).
    contract_violations: human-readable breaches of the in-place contract seen on the device, e.g.
      "guard zone after dy changed at byte +0", "cos changed at (0, 3, 0, 17)".
    """

    status: int
    failed_call: str = ""                 # the function that returned ``status`` ("" when 0)
    error_message: str = ""               # aclGetRecentErrMsg() after the failure, when any
    dy: np.ndarray | None = None          # dy read back after the call (dy's dtype and shape)
    contract_violations: tuple[str, ...] = ()
    kernel_ms: float | None = None        # ACL event time of the launch
    workspace_size: int = 0
