import os
from typing import Any, Iterable, List, Literal, Optional, Type, TypeVar, Union

from .info import FilterInfo, RotationResult

Item = Union[str, bytes]
# Settings take numbers, or text as on the command line ("10M", "0.1%",
# "4GiB"), parsed by the library.
Count = Union[int, float, str]
Rate = Union[float, int, str]
Path = Union[str, "os.PathLike[str]"]
WhenFull = Literal["error", "warn", "expand"]
_F = TypeVar("_F", bound="Filter")

__version__: str

def keywords(kind: str) -> List[str]: ...
def error_classes() -> List[str]: ...
def check_settings(kind: str, url: str, name: str, **settings: Any) -> None: ...

class ManualClock:
    def __init__(self, start: float) -> None: ...
    def set(self, now: float) -> None: ...
    def advance(self, seconds: float) -> None: ...
    def now(self) -> float: ...

class Filter:
    @classmethod
    def open(
        cls: Type[_F],
        url: str,
        name: str,
        *,
        when_full: Optional[WhenFull] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Path] = ...,
        tls_cert_file: Optional[Path] = ...,
        tls_key_file: Optional[Path] = ...,
        clock: Optional[ManualClock] = ...,
    ) -> _F: ...
    @classmethod
    def create_or_open(cls: Type[_F], *args: Any, **kwargs: Any) -> _F: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Literal["bloom", "expanding", "circular"]: ...
    @property
    def url(self) -> str: ...
    def add(self, item: Item) -> bool: ...
    def contains(self, item: Item) -> bool: ...
    def __contains__(self, item: Item) -> bool: ...
    def check_and_insert(self, item: Item) -> bool: ...
    def add_many(self, items: Iterable[Item]) -> List[bool]: ...
    def contains_many(self, items: Iterable[Item]) -> List[bool]: ...
    def check_and_insert_many(self, items: Iterable[Item]) -> List[bool]: ...
    def count(self) -> int: ...
    def info(self) -> FilterInfo: ...
    def clear(self) -> None: ...
    def drop(self) -> bool: ...

class BloomFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        capacity: Optional[Count] = ...,
        error_rate: Optional[Rate] = ...,
        bits: Optional[Count] = ...,
        hashes: Optional[Count] = ...,
        backend: Optional[Literal["bitmap", "redisbloom"]] = ...,
        max_bits: Optional[Count] = ...,
        max_block_bits: Optional[Count] = ...,
        when_full: Optional[WhenFull] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Path] = ...,
        tls_cert_file: Optional[Path] = ...,
        tls_key_file: Optional[Path] = ...,
    ) -> None: ...

class ExpandingFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        capacity: Optional[Count] = ...,
        error_rate: Optional[Rate] = ...,
        growth: Optional[Rate] = ...,
        tightening: Optional[Rate] = ...,
        max_generations: Optional[Count] = ...,
        max_bytes: Optional[Count] = ...,
        backend: Optional[Literal["bitmap", "redisbloom"]] = ...,
        max_bits: Optional[Count] = ...,
        max_block_bits: Optional[Count] = ...,
        when_full: Optional[WhenFull] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Path] = ...,
        tls_cert_file: Optional[Path] = ...,
        tls_key_file: Optional[Path] = ...,
    ) -> None: ...
    @staticmethod
    def adopt_legacy(
        url: str,
        name: str,
        legacy_key: str,
        *,
        bit: int = 30,
        hashes: int = 6,
        verify: Optional[Iterable[Item]] = ...,
        capacity: Optional[Count] = ...,
        error_rate: Optional[Rate] = ...,
        growth: Optional[Rate] = ...,
        tightening: Optional[Rate] = ...,
        max_generations: Optional[Count] = ...,
        max_bytes: Optional[Count] = ...,
        backend: Optional[Literal["bitmap", "redisbloom"]] = ...,
        max_bits: Optional[Count] = ...,
        max_block_bits: Optional[Count] = ...,
        when_full: Optional[WhenFull] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Path] = ...,
        tls_cert_file: Optional[Path] = ...,
        tls_key_file: Optional[Path] = ...,
    ) -> "ExpandingFilter": ...
    def expand(self) -> bool: ...

class CircularFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        generations: Optional[Count] = ...,
        capacity: Optional[Count] = ...,
        error_rate: Optional[Rate] = ...,
        schedule: Optional[str] = ...,
        mode: Optional[Literal["insert-newest-query-all", "insert-all-query-oldest"]] = ...,
        lazy: Optional[bool] = ...,
        clock: Optional[ManualClock] = ...,
        backend: Optional[Literal["bitmap", "redisbloom"]] = ...,
        max_bits: Optional[Count] = ...,
        max_block_bits: Optional[Count] = ...,
        when_full: Optional[WhenFull] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Path] = ...,
        tls_cert_file: Optional[Path] = ...,
        tls_key_file: Optional[Path] = ...,
    ) -> None: ...
    def rotate(self) -> RotationResult: ...
    def rotate_if_due(self) -> RotationResult: ...
    @property
    def epoch(self) -> int: ...
    @property
    def schedule(self) -> Optional[str]: ...
    @property
    def next_rotation_at(self) -> Optional[str]: ...
