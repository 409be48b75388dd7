import os
from typing import Any, Dict, Iterable, List, Optional, Type, TypeVar, Union

Item = Union[str, bytes]
_F = TypeVar("_F", bound="Filter")

__version__: str

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
        when_full: Optional[str] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
    ) -> _F: ...
    @classmethod
    def create_or_open(cls: Type[_F], *args: Any, **kwargs: Any) -> _F: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
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
    def info(self) -> Dict[str, Any]: ...
    def clear(self) -> None: ...
    def drop(self) -> bool: ...

class BloomFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        capacity: Optional[int] = ...,
        error_rate: Optional[float] = ...,
        bits: Optional[int] = ...,
        hashes: Optional[int] = ...,
        max_bits: Optional[int] = ...,
        max_block_bits: Optional[int] = ...,
        backend: Optional[str] = ...,
        when_full: Optional[str] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
    ) -> None: ...

class ExpandingFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        capacity: Optional[int] = ...,
        error_rate: Optional[float] = ...,
        growth: Optional[float] = ...,
        tightening: Optional[float] = ...,
        max_generations: Optional[int] = ...,
        max_bytes: Optional[int] = ...,
        max_bits: Optional[int] = ...,
        max_block_bits: Optional[int] = ...,
        when_full: Optional[str] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
    ) -> None: ...
    @staticmethod
    def adopt_legacy(
        url: str,
        name: str,
        legacy_key: str,
        *,
        bit: int = 30,
        hashes: int = 6,
        capacity: Optional[int] = ...,
        error_rate: Optional[float] = ...,
        growth: Optional[float] = ...,
        max_generations: Optional[int] = ...,
        tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
    ) -> "ExpandingFilter": ...
    def expand(self) -> bool: ...

class CircularFilter(Filter):
    def __init__(
        self,
        url: str,
        name: str,
        *,
        generations: Optional[int] = ...,
        capacity: Optional[int] = ...,
        error_rate: Optional[float] = ...,
        schedule: Optional[str] = ...,
        mode: Optional[str] = ...,
        lazy: Optional[bool] = ...,
        clock: Optional[ManualClock] = ...,
        max_bits: Optional[int] = ...,
        max_block_bits: Optional[int] = ...,
        backend: Optional[str] = ...,
        when_full: Optional[str] = ...,
        wait_replicas: Optional[int] = ...,
        wait_timeout_ms: Optional[int] = ...,
        tls_ca_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_cert_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
        tls_key_file: Optional[Union[str, "os.PathLike[str]"]] = ...,
    ) -> None: ...
    def rotate(self) -> Dict[str, Any]: ...
    def rotate_if_due(self) -> Dict[str, Any]: ...
    @property
    def epoch(self) -> int: ...
    @property
    def schedule(self) -> Optional[str]: ...
    @property
    def next_rotation_at(self) -> Optional[float]: ...
