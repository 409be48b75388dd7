"""The keyword arguments of the filter classes, typed, for type checkers
(``**settings: Unpack[BloomSettings]`` in the stubs) and for reading.

Settings take numbers, or text as on the rotabloom command line
(``"10M"``, ``"1e6"``, ``"0.1%"``, ``"4GiB"``), parsed by the library's
own parsers; ``None`` is a keyword left out (the library's default).
The keys are the library's table of settings (the keys of a configuration
file), the same for every kind that takes them.
"""

import os
from typing import Literal, Optional, TypedDict, Union

from ._rotabloom import ManualClock

__all__ = [
    "BloomSettings",
    "CircularSettings",
    "ExpandingSettings",
    "HandleKeywords",
    "OpenKeywords",
]

Count = Union[int, float, str]
Rate = Union[float, int, str]
Path = Union[str, "os.PathLike[str]"]
Backend = Literal["bitmap", "redisbloom", "valkey-bloom"]


class HandleKeywords(TypedDict, total=False):
    """What every class's constructor and ``Filter.open`` take: how the
    handle writes and connects."""

    when_full: Optional[Literal["error", "warn", "expand"]]
    wait_replicas: Optional[int]
    wait_timeout_ms: Optional[int]
    tls_ca_file: Optional[Path]
    tls_cert_file: Optional[Path]
    tls_key_file: Optional[Path]


class OpenKeywords(HandleKeywords, total=False):
    """``Filter.open``'s keywords (``clock``: circular filters only)."""

    clock: Optional[ManualClock]


class _Storage(TypedDict, total=False):
    backend: Optional[Backend]
    max_bits: Optional[Count]
    max_block_bits: Optional[Count]
    shards: Optional[Count]


class BloomSettings(HandleKeywords, _Storage, total=False):
    """``BloomFilter``'s keywords."""

    capacity: Optional[Count]
    error_rate: Optional[Rate]
    bits: Optional[Count]
    hashes: Optional[Count]


class ExpandingSettings(HandleKeywords, _Storage, total=False):
    """``ExpandingFilter``'s keywords (and ``adopt_legacy``'s settings)."""

    capacity: Optional[Count]
    error_rate: Optional[Rate]
    growth: Optional[Rate]
    tightening: Optional[Rate]
    max_generations: Optional[Count]
    max_bytes: Optional[Count]


class CircularSettings(HandleKeywords, _Storage, total=False):
    """``CircularFilter``'s keywords."""

    generations: Optional[Count]
    capacity: Optional[Count]
    error_rate: Optional[Rate]
    schedule: Optional[str]
    mode: Optional[Literal["insert-newest-query-all", "insert-all-query-oldest"]]
    lazy: Optional[bool]
    clock: Optional[ManualClock]
