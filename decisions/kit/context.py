"""A context variable set for the length of a ``with`` block: how the platform hands a job what it
puts in place (a parts runner, a checkpoint folder) without passing it down every call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def set_within(var: ContextVar[T], value: T) -> Iterator[T]:
    """Within the block, ``var`` is ``value`` (yielded); after it, what it was before, even on an error."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)
