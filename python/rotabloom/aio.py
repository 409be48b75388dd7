"""rotabloom's filters for asyncio: the classes of :mod:`rotabloom`, with
every call that talks to Redis a coroutine.

::

    from rotabloom import aio

    seen = await aio.BloomFilter.create(url, "crawl", capacity="10M")
    new = await seen.check_and_insert_many(links)   # one round trip

    f = await aio.open_filter(url, "crawl")         # the class of its kind

Creating and opening (``create``, ``open``, ``open_filter``) take the
keywords of the blocking classes and raise the same exceptions
(:mod:`rotabloom.errors`); they run the blocking call on a worker thread,
once. Every call after that runs on the Rust library's async API, over one
multiplexed connection per object (made on first use, made again after
it broke), without the GIL and without blocking the event loop; any
number of tasks may share an object.

Cancelling a task cancels its wait, not its call: a call that has begun
runs to its end (all of a batch's items are written; no reply is left on
the connection for a later call to read), and its answer is dropped.
``await f.drain()`` returns once every call begun on ``f``, cancelled or
not, has finished. ``clear``, ``drop``, ``expand``, a sharded filter's
``info`` and ``adopt_legacy`` are the blocking class's calls on a worker
thread; ``blocking`` is that object.
"""

import asyncio
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Type, TypeVar, Union

from . import _rotabloom
from .info import FilterInfo, RotationResult, ShardedFilterInfo, ShardedRotationResult

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .keywords import BloomSettings, CircularSettings, ExpandingSettings, OpenKeywords

__all__ = ["BloomFilter", "CircularFilter", "ExpandingFilter", "Filter", "open_filter"]

Item = Union[str, bytes]
_F = TypeVar("_F", bound="Filter")


class Filter:
    """A rotabloom filter for asyncio (base class of :class:`BloomFilter`,
    :class:`ExpandingFilter` and :class:`CircularFilter`). Made by
    ``create``, ``open`` or :func:`open_filter`, or from a blocking object
    with ``Filter.of(blocking)``."""

    __slots__ = ("_blocking", "_core")
    _blocking_class: Any = _rotabloom.Filter

    def __init__(self, blocking: _rotabloom.Filter) -> None:
        wanted = _CLASSES.get(getattr(blocking, "kind", None))
        if type(self) is not wanted:
            raise TypeError(
                f"a {type(blocking).__name__} makes an aio.{getattr(wanted, '__name__', '?')}, "
                f"not an aio.{type(self).__name__} (Filter.of picks the class)"
            )
        self._blocking = blocking
        self._core = _rotabloom._AsyncCore(blocking)

    @staticmethod
    def of(blocking: _rotabloom.Filter) -> "Filter":
        """The async object of the blocking filter object ``blocking``, as
        the class of its kind; both share the handle (a rotation one makes,
        the other sees), each its own connection."""
        cls = _CLASSES.get(blocking.kind)
        if cls is None:
            raise TypeError(f"no async class for kind {blocking.kind!r}")
        return cls(blocking)

    @classmethod
    async def open(
        cls: Type[_F], url: str, name: str, **keywords: "Unpack[OpenKeywords]"
    ) -> _F:
        """Opens an existing filter by name (``rotabloom.Filter.open``):
        ``Filter.open`` answers the class of the stored kind, a kind's own
        class raises ``KindMismatchError`` for another kind."""
        blocking = await asyncio.to_thread(cls._blocking_class.open, url, name, **keywords)
        made = Filter.of(blocking)
        if not isinstance(made, cls):
            raise TypeError(f"{cls.__name__}.open made a {type(made).__name__}")
        return made

    @property
    def blocking(self) -> _rotabloom.Filter:
        """The blocking object this one was made from."""
        return self._blocking

    @property
    def name(self) -> str:
        return self._blocking.name

    @property
    def kind(self) -> str:
        return self._blocking.kind

    @property
    def url(self) -> str:
        """The Redis URL, without its password."""
        return self._blocking.url

    @property
    def shards(self) -> int:
        return self._blocking.shards

    @property
    def running(self) -> int:
        """Calls begun on this object and not yet finished."""
        return self._core.running

    async def add(self, item: Item) -> bool:
        """Inserts ``item``; True when it was not there before."""
        return await self._core.add(item)

    async def contains(self, item: Item) -> bool:
        """Whether ``item`` may have been inserted."""
        return await self._core.contains(item)

    async def check_and_insert(self, item: Item) -> bool:
        """Atomically: True when ``item`` was new (and is now inserted). Of
        any number of concurrent calls with the same new item, exactly one
        returns True."""
        return await self._core.check_and_insert(item)

    async def add_many(self, items: Iterable[Item]) -> List[bool]:
        """``add`` for every item, answers in order."""
        return await self._core.add_many(items)

    async def contains_many(self, items: Iterable[Item]) -> List[bool]:
        """``contains`` for every item, answers in order."""
        return await self._core.contains_many(items)

    async def check_and_insert_many(self, items: Iterable[Item]) -> List[bool]:
        """``check_and_insert`` for every item, atomically: a repeated item
        is new at most once."""
        return await self._core.check_and_insert_many(items)

    async def count(self) -> int:
        """Distinct insertions so far, over all generations and shards."""
        return await self._core.count()

    async def info(self) -> Union[FilterInfo, ShardedFilterInfo]:
        """The filter's state, as ``rotabloom.Filter.info`` has it."""
        if self.shards > 1:
            return await asyncio.to_thread(self._blocking.info)
        return await self._core.info()

    async def clear(self) -> None:
        """Empties the filter, keeping its settings."""
        await asyncio.to_thread(self._blocking.clear)

    async def drop(self) -> bool:
        """Deletes the filter and its data; True if it existed."""
        return await asyncio.to_thread(self._blocking.drop)

    async def drain(self) -> None:
        """Returns once no call begun on this object is running, those
        whose task was cancelled included."""
        await self._core.drain()

    def __repr__(self) -> str:
        return f"<rotabloom.aio.{type(self).__name__} {self.name!r} at {self.url}>"


class BloomFilter(Filter):
    """:class:`rotabloom.BloomFilter` for asyncio."""

    __slots__ = ()
    _blocking_class = _rotabloom.BloomFilter

    @classmethod
    async def create(cls, url: str, name: str, **settings: "Unpack[BloomSettings]") -> "BloomFilter":
        """Creates the filter, or opens it when it exists with the same
        settings (``rotabloom.BloomFilter(url, name, **settings)``)."""
        return cls(await asyncio.to_thread(_rotabloom.BloomFilter, url, name, **settings))


class ExpandingFilter(Filter):
    """:class:`rotabloom.ExpandingFilter` for asyncio."""

    __slots__ = ()
    _blocking_class = _rotabloom.ExpandingFilter

    @classmethod
    async def create(
        cls, url: str, name: str, **settings: "Unpack[ExpandingSettings]"
    ) -> "ExpandingFilter":
        """Creates or opens the filter (``rotabloom.ExpandingFilter``)."""
        return cls(await asyncio.to_thread(_rotabloom.ExpandingFilter, url, name, **settings))

    async def expand(self) -> bool:
        """Adds a generation now (``rotabloom.ExpandingFilter.expand``)."""
        return await asyncio.to_thread(self._blocking.expand)


class CircularFilter(Filter):
    """:class:`rotabloom.CircularFilter` for asyncio."""

    __slots__ = ()
    _blocking_class = _rotabloom.CircularFilter

    @classmethod
    async def create(
        cls, url: str, name: str, **settings: "Unpack[CircularSettings]"
    ) -> "CircularFilter":
        """Creates or opens the filter (``rotabloom.CircularFilter``)."""
        return cls(await asyncio.to_thread(_rotabloom.CircularFilter, url, name, **settings))

    async def rotate(self) -> Union[RotationResult, ShardedRotationResult]:
        """Rotates once now (``rotabloom.CircularFilter.rotate``)."""
        return await self._core.rotate()

    async def rotate_if_due(self) -> Union[RotationResult, ShardedRotationResult]:
        """Performs the rotations the schedule owes now, however many
        processes call it (``rotabloom.CircularFilter.rotate_if_due``)."""
        return await self._core.rotate_if_due()

    @property
    def epoch(self) -> int:
        return self._blocking.epoch

    @property
    def schedule(self) -> Optional[str]:
        return self._blocking.schedule

    @property
    def next_rotation_at(self) -> Optional[str]:
        return self._blocking.next_rotation_at


_CLASSES = {"bloom": BloomFilter, "expanding": ExpandingFilter, "circular": CircularFilter}


def _settle(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    """Resolves ``future`` on its loop with a call's outcome (the binding
    calls it through ``call_soon_threadsafe``); a future cancelled
    meanwhile takes none."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def open_filter(url: str, name: str, **keywords: "Unpack[OpenKeywords]") -> Filter:
    """Opens the existing filter ``name`` at ``url`` as the async class of
    its kind (``rotabloom.open_filter``)."""
    return await Filter.open(url, name, **keywords)
