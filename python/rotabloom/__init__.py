"""Bloom filters kept in Redis, from the rotabloom Rust library.

- :class:`BloomFilter`: one fixed-size generation;
- :class:`ExpandingFilter`: grows when full, keeping the error rate;
- :class:`CircularFilter`: generations rotated on a schedule, so that items
  are forgotten after a window (re-crawls);
- :class:`ManualClock`: a clock moved by hand, for tests of circular filters;
- :mod:`rotabloom.errors`: the exceptions (:class:`RotabloomError` and its
  subclasses);
- :mod:`rotabloom.info`: the dicts ``info()`` and the rotations return,
  typed (:class:`FilterInfo`, :class:`RotationResult`);
- :mod:`rotabloom.scrapy`: a Scrapy / scrapy-redis dupefilter.

Every filter reads and writes the same Redis format as the rotabloom
command-line tool and the Rust library, so all of them can share a filter.
"""

import os
from typing import Optional, Union

from ._rotabloom import (
    BloomFilter,
    CircularFilter,
    ExpandingFilter,
    Filter,
    ManualClock,
    __version__,
)
from .errors import *  # noqa: F401,F403  (the exceptions are part of the API)
from .errors import __all__ as _errors
from .info import (
    FilterInfo,
    GenerationInfo,
    RotationResult,
    ShardedFilterInfo,
    ShardedRotationResult,
    ShardInfo,
    WarningInfo,
)


def open_filter(
    url: str,
    name: str,
    *,
    when_full: Optional[str] = None,
    wait_replicas: Optional[int] = None,
    wait_timeout_ms: Optional[int] = None,
    tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    clock: Optional[ManualClock] = None,
) -> Filter:
    """Opens the existing filter ``name`` at ``url`` as the class of its
    kind (``Filter.open``; the keywords are described there)."""
    return Filter.open(
        url,
        name,
        when_full=when_full,
        wait_replicas=wait_replicas,
        wait_timeout_ms=wait_timeout_ms,
        tls_ca_file=tls_ca_file,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        clock=clock,
    )


__all__ = [
    "BloomFilter",
    "CircularFilter",
    "ExpandingFilter",
    "Filter",
    "FilterInfo",
    "GenerationInfo",
    "ManualClock",
    "RotationResult",
    "ShardInfo",
    "ShardedFilterInfo",
    "ShardedRotationResult",
    "WarningInfo",
    "open_filter",
    "__version__",
    *_errors,
]
