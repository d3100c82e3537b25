"""Fixed batch shapes for a domain's compiled ``decide``: a batch padded to a bucket size, so a
compiled call is traced once per bucket, not once per batch size."""

from __future__ import annotations

import numpy as np

STEP = 1024
"""Above this many states a batch is padded to a multiple of it (below, to a power of two)."""


def bucket(size: int) -> int:
    """The padded batch size of ``size`` states: the next power of two up to ``STEP`` (1 for one
    state), else the next multiple of ``STEP``."""
    if size > STEP:
        return -(-size // STEP) * STEP
    return 1 << max(size - 1, 0).bit_length()


def padded(rows: np.ndarray, size: int) -> np.ndarray:
    """``rows`` (a batch along axis 0) padded to ``size`` rows by repeating its first row.

    Raises:
        ValueError: ``rows`` is empty or already longer than ``size``.
    """
    if rows.shape[0] == 0 or rows.shape[0] > size:
        raise ValueError(f"cannot pad {rows.shape[0]} rows to {size}")
    extra = np.repeat(rows[:1], size - rows.shape[0], axis=0)
    return np.concatenate([rows, extra], axis=0)
