"""A case's sizes: the elements of a shape and of a tensor's storage, and the bytes one launch moves (the memory
traffic the kernel cannot avoid): ``2 * B*S*N*L * itemsize(dy)`` (the dy slice read and written)
``+ 2 * numel(cos) * itemsize(cos)`` (cos and sin read once per distinct row). ``prmg bench`` divides it by the
median time (GB/s); the HTML page plots kernel time against it. Python integers throughout: a record's shape of
any size gives its exact count."""

from __future__ import annotations

from typing import Sequence

from .case import Case
from .dtypes import lookup


def element_count(shape: Sequence[int]) -> int:
    """The number of elements of a tensor of ``shape`` (negative dims count as 0)."""
    count = 1
    for dim in shape:
        count *= max(int(dim), 0)
    return count


def storage_elements(case: Case, tensor: str = "dy") -> int:
    """The elements ``tensor``'s storage holds (``case.shape_of``, ``strides_of``, ``offset_of``): its offset, plus
    its size for a contiguous view, or ``1 + sum((dim - 1) * stride)`` for a strided one (0 for an empty view)."""
    shape, strides = case.shape_of(tensor), case.strides_of(tensor)
    if strides is None:
        reach = element_count(shape)
    else:
        reach = 0 if any(dim <= 0 for dim in shape) else \
            1 + sum((dim - 1) * stride for dim, stride in zip(shape, strides))
    return case.offset_of(tensor) + reach


def bytes_moved(case: Case) -> int:
    """``2*rows*L*itemsize(dy) + 2*numel(cos)*itemsize(cos)`` for one launch of ``case`` (a ``Case``, or a
    ``CaseResult``, which names the same fields; cos's dtype is dy's when a record leaves it out)."""
    start, end = case.partial_slice
    rows = element_count(case.shape[:-1])
    cos_items = element_count(case.cos_shape)
    return (2 * rows * (end - start) * lookup(case.dtype).numpy.itemsize
            + 2 * cos_items * lookup(case.cos_dtype or case.dtype).numpy.itemsize)
