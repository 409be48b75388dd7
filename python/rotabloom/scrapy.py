"""A Scrapy dupefilter on rotabloom: shared by every process of a crawl,
atomic per request, with an optional re-crawl window.

In ``settings.py``::

    DUPEFILTER_CLASS = "rotabloom.scrapy.RFPDupeFilter"
    ROTABLOOM_URL = "redis://127.0.0.1:6379/0"   # default: REDIS_URL
    ROTABLOOM_CAPACITY = "10M"                   # requests (per period)
    ROTABLOOM_ERROR_RATE = "0.1%"                # new requests wrongly dropped
    # Forget fetched pages after a while (fetch them again):
    ROTABLOOM_RECRAWL_EVERY = "7d"               # rotation schedule
    ROTABLOOM_GENERATIONS = 4                    # the window: 3 to 4 periods

It works with Scrapy's own scheduler and with scrapy-redis's
(``SCHEDULER = "scrapy_redis.scheduler.Scheduler"``), which builds it with
``from_spider`` and calls ``clear`` on a flush.

Values are numbers, or text as on the rotabloom command line (``"10M"``,
``"1e6"``, ``"0.1%"``, ``"4GiB"``, ``"7d"``), parsed by the library's own
parsers, so a value from ``-s NAME=VALUE`` works as one in ``settings.py``.
Every setting is checked before any connection is made; a bad one raises
``InvalidParameterError`` naming it.

Settings (all optional):

``ROTABLOOM_URL``
    Redis URL, any form the rotabloom command accepts. Default:
    ``REDIS_URL``, else ``redis://REDIS_HOST:REDIS_PORT`` (scrapy-redis's
    settings), else ``redis://127.0.0.1:6379``.
``ROTABLOOM_KEY``
    The filter's name; ``%(spider)s`` is the spider's name. Default
    ``%(spider)s:dupefilter``.
``ROTABLOOM_KIND``
    ``expanding`` (default: grows as needed), ``bloom`` (fixed size) or
    ``circular`` (default when ``ROTABLOOM_RECRAWL_EVERY`` is set).
``ROTABLOOM_CAPACITY``
    Requests the filter is sized for: per period for a circular filter,
    the first generation of an expanding one. Default 1,000,000.
``ROTABLOOM_ERROR_RATE``
    The false-positive rate: the share of new requests wrongly dropped as
    seen. Default 0.01, the library's and the command line's (``0.1%`` for
    one in a thousand).
``ROTABLOOM_RECRAWL_EVERY``
    Rotation schedule of a circular filter (``"7d"``, ``"12h"``,
    ``"daily@03:00"``, ``"weekly:mon@03:00"``, ``"monthly:1@00:00"``...).
    A request seen during one period is dropped until
    ``ROTABLOOM_GENERATIONS`` rotations later, then let through once more.
``ROTABLOOM_GENERATIONS``
    Generations of a circular filter (default 4).
``ROTABLOOM_MODE``
    ``insert-newest-query-all`` (default) or ``insert-all-query-oldest``.
``ROTABLOOM_LAZY``
    Whether ordinary calls perform a rotation that has come due (default
    True, so that no cron job is needed).
``ROTABLOOM_GROWTH``, ``ROTABLOOM_TIGHTENING``, ``ROTABLOOM_MAX_GENERATIONS``, ``ROTABLOOM_MAX_BYTES``
    How an expanding filter grows (see ``rotabloom.ExpandingFilter``).
``ROTABLOOM_BITS``, ``ROTABLOOM_HASHES``
    A bloom filter's explicit shape, instead of capacity and error rate.
``ROTABLOOM_BACKEND``, ``ROTABLOOM_MAX_BITS``, ``ROTABLOOM_MAX_BLOCK_BITS``
    ``bitmap`` (default), ``redisbloom`` or ``valkey-bloom``; the largest generation and the
    block size, in bits.
``ROTABLOOM_CLOCK``
    A :class:`rotabloom.ManualClock` (or its import path) in place of the
    Redis server's clock; for tests and backfills.
``ROTABLOOM_ADOPT_KEY``
    Migration from scrapy-redis-bloomfilter: the key that package used
    (its default is ``%(spider)s:bloomfilter``); ``BLOOMFILTER_BIT`` and
    ``BLOOMFILTER_HASH_NUMBER`` describe it. On first use the bitmap is
    adopted without a copy, checked before it moves
    (``NotAdoptableError`` otherwise); everything it had seen stays seen.
    With an expanding filter it becomes the filter's frozen first
    generation. With a re-crawl window (circular) it is adopted beside
    the window, as the expanding filter ``<ROTABLOOM_KEY>:legacy``, and
    treated as a generation made at the adoption: what it holds is
    dropped as seen until the window has rotated past that moment, then
    its bitmap is deleted. Implies ``ROTABLOOM_FINGERPRINT =
    "scrapy-redis"``.
``ROTABLOOM_FINGERPRINT``
    ``scrapy`` (default: ``crawler.request_fingerprinter``, 20 bytes) or
    ``scrapy-redis`` (the 40-hex-digit fingerprint of scrapy-redis, which
    an adopted bitmap holds).
``ROTABLOOM_CLEAR_ON_CLOSE``
    Whether a scheduler's flush may empty the filter. scrapy-redis's
    scheduler flushes when the spider closes unless ``SCHEDULER_PERSIST``
    is True (its default is False), and at the start with
    ``SCHEDULER_FLUSH_ON_START``. Default False: the filter, a re-crawl
    window above all, is kept, and a warning says so; True clears it, and
    says so too.
``ROTABLOOM_WHEN_FULL``
    ``error`` (default: a full bloom or circular filter raises
    ``FullError``), ``warn`` (write on, warn once) or ``expand`` (an
    expanding filter grows anyway).
``ROTABLOOM_WAIT_REPLICAS``, ``ROTABLOOM_WAIT_TIMEOUT_MS``
    Every write waits until that many replicas have it (``WAIT``), else
    raises the retryable ``ReplicasTimeoutError``.
``ROTABLOOM_TLS_CA_FILE``, ``ROTABLOOM_TLS_CERT_FILE``, ``ROTABLOOM_TLS_KEY_FILE``
    With a ``rediss://`` URL: PEM files of the certificate authorities to
    trust instead of the system's, and of a client certificate and its key
    (mutual TLS).
``DUPEFILTER_DEBUG``
    Log every filtered request, not only the first.

Any other ``ROTABLOOM_*`` setting is refused, with the nearest known name.
"""

import difflib
import logging
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.misc import load_object

from . import BloomFilter, CircularFilter, ExpandingFilter, Filter, ManualClock
from ._rotabloom import check_settings, keywords
from .errors import InvalidParameterError, ParameterMismatchError
from .keywords import HandleKeywords

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

DEFAULT_KEY = "%(spider)s:dupefilter"
# The settings the dupefilter gives a value of its own when they are not
# set; every other one is left to the library's default (the command
# line's), error_rate included.
DEFAULTS: Dict[str, Any] = {"capacity": 1_000_000, "generations": 4, "lazy": True}
KINDS = ("bloom", "expanding", "circular")
FINGERPRINTS = ("scrapy", "scrapy-redis")
CLASSES = {"bloom": BloomFilter, "expanding": ExpandingFilter, "circular": CircularFilter}
# The dupefilter's own settings, which are no filter keyword.
OWN = (
    "ROTABLOOM_URL",
    "ROTABLOOM_KEY",
    "ROTABLOOM_KIND",
    "ROTABLOOM_ADOPT_KEY",
    "ROTABLOOM_FINGERPRINT",
    "ROTABLOOM_CLEAR_ON_CLOSE",
)
LEGACY_SUFFIX = ":legacy"


def setting_name(keyword: str) -> str:
    """The Scrapy setting of a filter keyword (``capacity``:
    ``ROTABLOOM_CAPACITY``)."""
    return "ROTABLOOM_RECRAWL_EVERY" if keyword == "schedule" else "ROTABLOOM_" + keyword.upper()


def known_settings() -> List[str]:
    """Every ``ROTABLOOM_*`` setting the dupefilter reads."""
    names = {setting_name(k) for kind in KINDS for k in keywords(kind)}
    return sorted(names.union(OWN))


def redis_url(settings: "BaseSettings") -> str:
    """``ROTABLOOM_URL``, or where scrapy-redis would connect."""
    url = settings.get("ROTABLOOM_URL") or settings.get("REDIS_URL")
    if url:
        return str(url)
    host = settings.get("REDIS_HOST") or "127.0.0.1"
    port = settings.getint("REDIS_PORT", 6379)
    return f"redis://{host}:{port}"


def _clock(value: Any) -> Optional[ManualClock]:
    if value is None or isinstance(value, ManualClock):
        return value
    clock = load_object(value)
    if not isinstance(clock, ManualClock):
        raise InvalidParameterError(f"ROTABLOOM_CLOCK {value!r} is not a rotabloom.ManualClock")
    return clock


def _choice(settings: "BaseSettings", name: str, choices: Tuple[str, ...], default: str) -> str:
    value = settings.get(name) or default
    if value not in choices:
        raise InvalidParameterError(f"{name} = {value!r}: expected one of {', '.join(choices)}")
    return str(value)


def _named(e: InvalidParameterError) -> InvalidParameterError:
    """``e`` about the Scrapy setting rather than the keyword."""
    keyword = getattr(e, "setting", None)
    if not keyword:
        return e
    message = str(e)
    for prefix in (f"{keyword}: ", f"invalid {keyword}: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    named = InvalidParameterError(f"{setting_name(keyword)}: {message}")
    named.setting = setting_name(keyword)
    return named


def _refuse_unknown(settings: "BaseSettings") -> None:
    known = known_settings()
    for name in settings:
        if isinstance(name, str) and name.startswith("ROTABLOOM_") and name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise InvalidParameterError(f"{name} is not a rotabloom setting{hint}")


class FilterSettings:
    """What the settings ask for, read and checked once (by the library's
    own parsers), before any connection is made."""

    def __init__(self, settings: "BaseSettings") -> None:
        _refuse_unknown(settings)
        self.url: str = redis_url(settings)
        self.key: str = settings.get("ROTABLOOM_KEY") or DEFAULT_KEY
        self.adopt_key: Optional[str] = settings.get("ROTABLOOM_ADOPT_KEY")
        default_kind = "circular" if settings.get("ROTABLOOM_RECRAWL_EVERY") else "expanding"
        self.kind: str = _choice(settings, "ROTABLOOM_KIND", KINDS, default_kind)
        if self.adopt_key and self.kind == "bloom":
            raise InvalidParameterError(
                "ROTABLOOM_ADOPT_KEY adopts into an expanding filter or a re-crawl window "
                "(circular), not into ROTABLOOM_KIND = 'bloom'"
            )
        self.keywords: Dict[str, Any] = self._keywords(settings)
        if self.kind == "circular" and "schedule" not in self.keywords:
            raise InvalidParameterError("a circular filter needs ROTABLOOM_RECRAWL_EVERY")
        self.fingerprint: str = _choice(
            settings,
            "ROTABLOOM_FINGERPRINT",
            FINGERPRINTS,
            "scrapy-redis" if self.adopt_key else "scrapy",
        )
        self.legacy_bit: int = settings.getint("BLOOMFILTER_BIT", 30)
        self.legacy_hashes: int = settings.getint("BLOOMFILTER_HASH_NUMBER", 6)
        self.clear_on_close: bool = settings.getbool("ROTABLOOM_CLEAR_ON_CLOSE", False)
        self.debug: bool = settings.getbool("DUPEFILTER_DEBUG")
        self.check()

    def _keywords(self, settings: "BaseSettings") -> Dict[str, Any]:
        """The keyword arguments of the filter class, from the settings of
        its kind; a setting of another kind is refused."""
        mine = keywords(self.kind)
        for kind in KINDS:
            for k in keywords(kind):
                if k not in mine and settings.get(setting_name(k)) is not None:
                    article = "an" if self.kind == "expanding" else "a"
                    raise InvalidParameterError(
                        f"{setting_name(k)} is not a setting of {article} {self.kind} filter"
                    )
        out: Dict[str, Any] = {}
        for k in mine:
            name = setting_name(k)
            if k == "lazy" and settings.get(name) is not None:
                value: Any = settings.getbool(name)
            elif k == "clock":
                value = _clock(settings.get(name))
            else:
                value = settings.get(name)
            if value is not None:
                out[k] = value
        # A bloom filter's explicit shape replaces capacity and error rate.
        shaped = "bits" in out or "hashes" in out
        for k, default in DEFAULTS.items():
            if k in mine and k not in out and not (shaped and k == "capacity"):
                out[k] = default
        return out

    def check(self) -> None:
        """Checks every value with the library, without connecting."""
        try:
            check_settings(self.kind, self.url, self.name("spider"), **self.keywords)
        except InvalidParameterError as e:
            raise _named(e) from None

    def name(self, spider_name: str) -> str:
        try:
            return self.key % {"spider": spider_name}
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidParameterError(f"ROTABLOOM_KEY {self.key!r}: {e}") from None

    def handle_keywords(self) -> Dict[str, Any]:
        """The keywords of the handle alone (writes, TLS), for the
        adopted bitmap of a window."""
        return {k: v for k, v in self.keywords.items() if k in HandleKeywords.__annotations__}

    def open(self, spider_name: str) -> Tuple[Filter, Optional["LegacyGeneration"]]:
        """Creates or opens the filter (adopting the legacy key first, if
        one is set) and performs any rotation that is due; also the
        adopted bitmap of a window, if there is one."""
        name = self.name(spider_name)
        try:
            if self.adopt_key and self.kind == "expanding":
                f: Filter = ExpandingFilter.adopt_legacy(
                    self.url, name, self.legacy_key(spider_name), **self.legacy(), **self.keywords
                )
                return f, None
            f = CLASSES[self.kind](self.url, name, **self.keywords)
        except ParameterMismatchError as e:
            raise self._mismatch(e) from None
        if not isinstance(f, CircularFilter):
            return f, None
        f.rotate_if_due()
        if not self.adopt_key:
            return f, None
        return f, LegacyGeneration.adopt(self, spider_name, f)

    def legacy_key(self, spider_name: str) -> str:
        return str(self.adopt_key) % {"spider": spider_name}

    def legacy(self) -> Dict[str, int]:
        return {"bit": self.legacy_bit, "hashes": self.legacy_hashes}

    def _mismatch(self, e: ParameterMismatchError) -> ParameterMismatchError:
        """``e`` with the setting that would keep the existing filter."""
        field = getattr(e, "field", None)
        if field not in {k for kind in KINDS for k in keywords(kind)}:
            return e
        fixed = ParameterMismatchError(
            f"{e} (set {setting_name(field)} = {e.stored!r} to keep the filter as it is, "
            "or drop it with `rotabloom drop` to start afresh)"
        )
        fixed.field, fixed.stored, fixed.requested = e.field, e.stored, e.requested
        return fixed


class LegacyGeneration:
    """A scrapy-redis-bloomfilter bitmap adopted beside a re-crawl window.

    The library adopts a legacy bitmap only as the frozen first generation
    of an expanding filter; a circular filter cannot hold one. So the
    bitmap is adopted (moved, checked, never written) into the expanding
    filter ``<name>:legacy``, and the dupefilter treats it as a generation
    of the window made at the adoption: a request it holds is dropped as
    seen, and not inserted, until every generation of the window that
    existed at the adoption has been rotated out, exactly when items
    inserted at that moment are forgotten. Then its bitmap is deleted
    (``clear``), the filter staying as the record that the adoption
    happened, so that a restart opens it rather than adopting again. The
    adoption's time and the window's generations are both read from the
    Redis server's clock.
    """

    def __init__(self, adopted: ExpandingFilter, window: CircularFilter) -> None:
        self.adopted = adopted
        self.window = window
        self.until_epoch: Optional[int] = None
        adopted_info = adopted.info()
        window_info = window.info()
        # Generations are listed oldest first, rotated out oldest first.
        covering = sum(
            1 for g in window_info["generations"] if g["created_at_ms"] <= adopted_info["created_at_ms"]
        )
        if covering:
            self.until_epoch = window_info["epoch"] + covering
            logger.info(
                "rotabloom: the adopted bitmap %r answers 'seen' for what it holds until the "
                "re-crawl window %r has rotated %d more time(s) (epoch %d)",
                adopted.name, window.name, covering, self.until_epoch,
            )
        elif adopted_info["generations"][0]["memory_bytes"] > 0:
            self.retire()

    @classmethod
    def adopt(cls, settings: FilterSettings, spider_name: str, window: CircularFilter) -> "LegacyGeneration":
        """Adopts ``ROTABLOOM_ADOPT_KEY`` beside ``window`` (or opens the
        filter adopted before)."""
        adopted = ExpandingFilter.adopt_legacy(
            settings.url,
            window.name + LEGACY_SUFFIX,
            settings.legacy_key(spider_name),
            # Never written: its one new generation is as small as can be.
            capacity=1,
            error_rate=settings.keywords.get("error_rate"),
            **settings.legacy(),
            **settings.handle_keywords(),
        )
        return cls(adopted, window)

    def holds(self, fingerprint: Union[str, bytes]) -> bool:
        """Whether the bitmap, still inside the window (as the window was
        last read), holds ``fingerprint``; retires it once outside."""
        if self.until_epoch is None:
            return False
        if self.window.epoch >= self.until_epoch:
            self.retire()
            return False
        return self.adopted.contains(fingerprint)

    def retire(self) -> None:
        """Deletes the bitmap: the window has moved past it."""
        self.until_epoch = None
        self.adopted.clear()
        logger.info(
            "rotabloom: the adopted bitmap %r is out of the re-crawl window %r: deleted",
            self.adopted.name, self.window.name,
        )


def _scrapy_redis_fingerprint(request: "Request") -> str:
    # The exact fingerprint scrapy-redis (and so scrapy-redis-bloomfilter)
    # stored, taken from that package rather than re-implemented.
    from scrapy_redis.dupefilter import RFPDupeFilter as ScrapyRedisDupeFilter

    return ScrapyRedisDupeFilter.request_fingerprint(None, request)


class RFPDupeFilter(BaseDupeFilter):
    """Drops requests whose fingerprint a rotabloom filter in Redis has
    seen; every process of a crawl shares the filter, and of concurrent
    processes seeing a new request exactly one lets it through."""

    def __init__(
        self,
        settings: FilterSettings,
        fingerprinter: Any = None,
        stats: Optional["StatsCollector"] = None,
        spider_name: Optional[str] = None,
    ) -> None:
        self.settings = settings
        self.fingerprinter = fingerprinter
        self.stats = stats
        self.debug = settings.debug
        self.logdupes = True
        self.filter: Optional[Filter] = None
        self.legacy: Optional[LegacyGeneration] = None
        if spider_name is not None:
            self.filter, self.legacy = settings.open(spider_name)

    @classmethod
    def from_crawler(cls, crawler: "Crawler") -> "RFPDupeFilter":
        spider = getattr(crawler, "spider", None)
        return cls(
            FilterSettings(crawler.settings),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            spider_name=spider.name if spider is not None else None,
        )

    @classmethod
    def from_spider(cls, spider: "Spider") -> "RFPDupeFilter":
        """What ``scrapy_redis.scheduler.Scheduler`` calls."""
        crawler = spider.crawler
        return cls(
            FilterSettings(crawler.settings),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            spider_name=spider.name,
        )

    def open(self, spider: Optional["Spider"] = None) -> None:
        if self.filter is None:
            if spider is None:
                raise InvalidParameterError("the dupefilter needs the spider's name for ROTABLOOM_KEY")
            self.filter, self.legacy = self.settings.open(spider.name)

    def fingerprint(self, request: "Request") -> Union[str, bytes]:
        """The item the filter holds for ``request``."""
        if self.settings.fingerprint == "scrapy-redis":
            return _scrapy_redis_fingerprint(request)
        if self.fingerprinter is None:
            from scrapy.utils.request import RequestFingerprinter

            self.fingerprinter = RequestFingerprinter()
        return self.fingerprinter.fingerprint(request)

    def _filter(self) -> Filter:
        if self.filter is None:
            raise InvalidParameterError("the dupefilter is not open (or closed already)")
        return self.filter

    def request_seen(self, request: "Request") -> bool:
        fp = self.fingerprint(request)
        if self.legacy is not None and self.legacy.holds(fp):
            return True
        return not self._filter().check_and_insert(fp)

    def clear(self) -> None:
        """What a scheduler's flush calls (scrapy-redis's, at close unless
        ``SCHEDULER_PERSIST``): empties the filter only with
        ``ROTABLOOM_CLEAR_ON_CLOSE = True``; either way, logs what it did.
        To empty it from your own code, call ``self.filter.clear()``."""
        f = self._filter()
        if not self.settings.clear_on_close:
            logger.warning(
                "rotabloom: the scheduler asked to clear the dupefilter %r (%d requests seen); "
                "kept it. Set ROTABLOOM_CLEAR_ON_CLOSE = True to let a flush clear it, or "
                "SCHEDULER_PERSIST = True (scrapy-redis) not to flush",
                f.name, f.count(),
            )
            self._count("rotabloom/clear_refused")
            return
        count = f.count()
        f.clear()
        if self.legacy is not None:
            self.legacy.adopted.clear()
            self.legacy.until_epoch = None
        logger.warning(
            "rotabloom: cleared the dupefilter %r (%d requests seen) at the scheduler's request "
            "(ROTABLOOM_CLEAR_ON_CLOSE = True)",
            f.name, count,
        )
        self._count("rotabloom/cleared")

    def close(self, reason: str = "") -> None:
        # The connections close with the filter objects. scrapy-redis's
        # scheduler flushes after this, so the filter stays reachable.
        pass

    def _count(self, key: str, spider: Optional["Spider"] = None) -> None:
        stats = self.stats or getattr(getattr(spider, "crawler", None), "stats", None)
        if stats is not None:
            stats.inc_value(key)

    def log(self, request: "Request", spider: "Spider") -> None:
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s", {"request": request}, extra={"spider": spider})
        elif self.logdupes:
            logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        self._count("dupefilter/filtered", spider)
