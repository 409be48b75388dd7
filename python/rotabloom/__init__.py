"""Bloom filters kept in Redis, from the rotabloom Rust library.

- :class:`BloomFilter`: one fixed-size generation;
- :class:`ExpandingFilter`: grows when full, keeping the error rate;
- :class:`CircularFilter`: generations rotated on a schedule, so that items
  are forgotten after a window (re-crawls);
- :class:`ManualClock`: a clock moved by hand, for tests of circular filters;
- :mod:`rotabloom.errors`: the exceptions (:class:`RotabloomError` and its
  subclasses);
- :mod:`rotabloom.scrapy`: a Scrapy / scrapy-redis dupefilter.

Every filter reads and writes the same Redis format as the rotabloom
command-line tool and the Rust library, so all of them can share a filter.
"""

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


def open_filter(url, name):
    """Opens the existing filter ``name`` at ``url`` as the class of its kind."""
    return Filter.open(url, name)


__all__ = [
    "BloomFilter",
    "CircularFilter",
    "ExpandingFilter",
    "Filter",
    "ManualClock",
    "open_filter",
    "__version__",
    *_errors,
]
