"""Seeded, reproducible inputs for a case: uniform, normal, explicit values, .npy files, RoPE tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Inputs:
    """The three input tensors of one case, each in its own dtype (dy's shape, cos/sin shapes)."""

    dy: np.ndarray
    cos: np.ndarray
    sin: np.ndarray
