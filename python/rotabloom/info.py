"""The dicts rotabloom returns, typed: ``Filter.info()`` gives a
:class:`FilterInfo`, ``CircularFilter.rotate()`` and ``rotate_if_due()`` a
:class:`RotationResult`. Their keys and value styles are those of the
command line's JSON (``rotabloom status --json``, ``rotabloom rotate
--json``): ``items``, ``capacity``, times as RFC 3339 strings (UTC, whole
seconds) with ``created_at_ms`` for the exact time, ``result``,
``next_rotation_at``. Every key is always present. A sharded filter's
(``shards`` > 1) have more: :class:`ShardedFilterInfo` and
:class:`ShardedRotationResult`.
"""

from typing import Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    "FilterInfo",
    "GenerationInfo",
    "RotationResult",
    "ShardInfo",
    "ShardedFilterInfo",
    "ShardedRotationResult",
    "WarningInfo",
]


class GenerationInfo(TypedDict):
    """A generation in ``info()["generations"]`` (``rotabloom status --json``)."""

    seq: int
    created_at: str
    created_at_ms: int
    items: int
    capacity: int
    fill: float
    bits: int
    hashes: int
    blocks: int
    set_bits: int
    fill_ratio: float
    false_positive_rate: float
    memory_bytes: int
    queried: bool
    written: bool

class WarningInfo(TypedDict):
    code: str
    level: Literal["info", "warn", "error"]
    message: str

class FilterInfo(TypedDict):
    """What ``Filter.info()`` returns (a filter of ``rotabloom status --json``)."""

    name: str
    kind: Literal["bloom", "expanding", "circular"]
    epoch: int
    created_at: str
    created_at_ms: int
    items: int
    capacity: int
    false_positive_rate: float
    memory_bytes: int
    next_rotation_at: Optional[str]
    parameters: Dict[str, Union[int, float, bool, str]]
    generations: List[GenerationInfo]
    warnings: List[WarningInfo]

class RotationResult(TypedDict):
    """What ``rotate()`` and ``rotate_if_due()`` return (``rotabloom rotate --json``)."""

    name: str
    result: Literal["rotated", "not_due", "superseded"]
    rotations: int
    epoch: int
    next_rotation_at: Optional[str]


class ShardInfo(FilterInfo):
    """One shard in ``info()["shard_filters"]``: the shard as a filter, its
    number and the ``host:port`` of the master holding it."""

    shard: int
    master: Optional[str]

class ShardedFilterInfo(FilterInfo):
    """What ``Filter.info()`` returns for a sharded filter (as ``rotabloom
    status --json``): the totals (``items``, ``capacity``,
    ``memory_bytes`` summed, ``false_positive_rate`` of the worst shard,
    the earliest ``next_rotation_at``, no ``generations``, each shard's
    warnings naming it), ``shards`` and every shard's own info."""

    shards: int
    shard_filters: List[ShardInfo]

class ShardedRotationResult(TypedDict):
    """What ``rotate()`` and ``rotate_if_due()`` return for a sharded
    filter: every shard rotated by its own compare-and-set, shard 0 first.
    ``result`` is the shards' common result, ``partial`` when they differ;
    ``rotations``, ``epoch`` and ``next_rotation_at`` the least over the
    shards; ``shard_results`` each shard's own."""

    name: str
    result: Literal["rotated", "not_due", "superseded", "partial"]
    rotations: int
    epoch: int
    next_rotation_at: Optional[str]
    shard_results: List[RotationResult]
