"""A Scrapy dupefilter on rotabloom: shared by every process of a crawl,
atomic per request, with an optional re-crawl window.

In ``settings.py``::

    DUPEFILTER_CLASS = "rotabloom.scrapy.RFPDupeFilter"
    ROTABLOOM_URL = "redis://127.0.0.1:6379/0"   # default: REDIS_URL
    # Forget fetched pages after a while (fetch them again):
    ROTABLOOM_RECRAWL_EVERY = "7d"               # rotation schedule
    ROTABLOOM_GENERATIONS = 4                    # skipped 3 to 4 periods

It works with Scrapy's own scheduler and with scrapy-redis's
(``SCHEDULER = "scrapy_redis.scheduler.Scheduler"``), which calls
``from_spider``, ``clear`` on a flush and ``close``.

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
``ROTABLOOM_CAPACITY``, ``ROTABLOOM_ERROR_RATE``
    Requests the filter is sized for (per period for a circular filter;
    the first generation of an expanding one) and the false-positive rate,
    the share of new requests wrongly dropped. Default 1,000,000 and 0.001.
``ROTABLOOM_RECRAWL_EVERY``
    Rotation schedule of a circular filter (``"7d"``, ``"12h"``,
    ``"daily@03:00"``, ``"weekly:mon@03:00"``, ``"monthly:1@00:00"``...).
    A request seen during one period is dropped until
    ``ROTABLOOM_GENERATIONS`` rotations later, then let through once more.
``ROTABLOOM_GENERATIONS``
    Generations of a circular filter (default 4).
``ROTABLOOM_MODE``
    ``insert-newest-query-all`` (default) or ``insert-all-query-oldest``.
``ROTABLOOM_CLOCK``
    A :class:`rotabloom.ManualClock` (or its import path) in place of the
    Redis server's clock; for tests and backfills.
``ROTABLOOM_ADOPT_KEY``
    Migration from scrapy-redis-bloomfilter: the key that package used
    (its default is ``%(spider)s:bloomfilter``). On first use the bitmap is
    adopted, without a copy, as the frozen first generation of an
    expanding filter (``BLOOMFILTER_BIT`` and ``BLOOMFILTER_HASH_NUMBER``
    describe it); everything it had seen stays seen. Implies
    ``ROTABLOOM_FINGERPRINT = "scrapy-redis"``.
``ROTABLOOM_FINGERPRINT``
    ``scrapy`` (default: ``crawler.request_fingerprinter``, 20 bytes) or
    ``scrapy-redis`` (the 40-hex-digit fingerprint of scrapy-redis, which
    an adopted bitmap holds).
``ROTABLOOM_WHEN_FULL``
    ``error`` (default: a full base or circular filter raises
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
"""

import logging

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.misc import load_object

from . import BloomFilter, CircularFilter, ExpandingFilter, ManualClock
from .errors import InvalidParameterError

logger = logging.getLogger(__name__)

DEFAULT_KEY = "%(spider)s:dupefilter"
DEFAULT_CAPACITY = 1_000_000
DEFAULT_ERROR_RATE = 0.001
DEFAULT_GENERATIONS = 4
KINDS = ("bloom", "expanding", "circular")
FINGERPRINTS = ("scrapy", "scrapy-redis")


def redis_url(settings):
    """``ROTABLOOM_URL``, or where scrapy-redis would connect."""
    url = settings.get("ROTABLOOM_URL") or settings.get("REDIS_URL")
    if url:
        return url
    host = settings.get("REDIS_HOST") or "127.0.0.1"
    port = settings.getint("REDIS_PORT", 6379)
    return f"redis://{host}:{port}"


def _clock(value):
    if value is None or isinstance(value, ManualClock):
        return value
    clock = load_object(value)
    if not isinstance(clock, ManualClock):
        raise InvalidParameterError(f"ROTABLOOM_CLOCK {value!r} is not a rotabloom.ManualClock")
    return clock


def _choice(settings, name, choices, default):
    value = settings.get(name) or default
    if value not in choices:
        raise InvalidParameterError(f"{name} = {value!r}: expected one of {', '.join(choices)}")
    return value


def _number(settings, name, convert, default):
    value = settings.get(name)
    if value is None:
        return default
    try:
        return convert(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} = {value!r} is not a number") from None


class FilterSettings:
    """What the settings ask for, read and checked once, before any
    connection is made."""

    def __init__(self, settings):
        self.url = redis_url(settings)
        self.key = settings.get("ROTABLOOM_KEY") or DEFAULT_KEY
        self.adopt_key = settings.get("ROTABLOOM_ADOPT_KEY")
        self.recrawl_every = settings.get("ROTABLOOM_RECRAWL_EVERY")
        default_kind = "circular" if self.recrawl_every else "expanding"
        self.kind = _choice(settings, "ROTABLOOM_KIND", KINDS, default_kind)
        if self.adopt_key and self.kind != "expanding":
            raise InvalidParameterError(
                "ROTABLOOM_ADOPT_KEY makes an expanding filter; "
                f"it does not go with ROTABLOOM_KIND = {self.kind!r}"
            )
        if self.kind == "circular" and not self.recrawl_every:
            raise InvalidParameterError("a circular filter needs ROTABLOOM_RECRAWL_EVERY")
        self.capacity = _number(settings, "ROTABLOOM_CAPACITY", int, DEFAULT_CAPACITY)
        self.error_rate = _number(settings, "ROTABLOOM_ERROR_RATE", float, DEFAULT_ERROR_RATE)
        self.generations = _number(settings, "ROTABLOOM_GENERATIONS", int, DEFAULT_GENERATIONS)
        self.mode = settings.get("ROTABLOOM_MODE")
        self.clock = _clock(settings.get("ROTABLOOM_CLOCK"))
        self.fingerprint = _choice(
            settings,
            "ROTABLOOM_FINGERPRINT",
            FINGERPRINTS,
            "scrapy-redis" if self.adopt_key else "scrapy",
        )
        self.legacy_bit = settings.getint("BLOOMFILTER_BIT", 30)
        self.legacy_hashes = settings.getint("BLOOMFILTER_HASH_NUMBER", 6)
        self.debug = settings.getbool("DUPEFILTER_DEBUG")
        # Checked by the filter classes, with the library's own parsers.
        self.writes = {
            "when_full": settings.get("ROTABLOOM_WHEN_FULL"),
            "wait_replicas": _number(settings, "ROTABLOOM_WAIT_REPLICAS", int, None),
            "wait_timeout_ms": _number(settings, "ROTABLOOM_WAIT_TIMEOUT_MS", int, None),
        }
        self.tls = {
            "tls_ca_file": settings.get("ROTABLOOM_TLS_CA_FILE"),
            "tls_cert_file": settings.get("ROTABLOOM_TLS_CERT_FILE"),
            "tls_key_file": settings.get("ROTABLOOM_TLS_KEY_FILE"),
        }

    def name(self, spider_name):
        try:
            return self.key % {"spider": spider_name}
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidParameterError(f"ROTABLOOM_KEY {self.key!r}: {e}") from None

    def open(self, spider_name):
        """Creates or opens the filter (adopting the legacy key first, if
        one is set) and performs any rotation that is due."""
        name = self.name(spider_name)
        sizing = {"capacity": self.capacity, "error_rate": self.error_rate}
        if self.adopt_key:
            return ExpandingFilter.adopt_legacy(
                self.url,
                name,
                self.adopt_key % {"spider": spider_name},
                bit=self.legacy_bit,
                hashes=self.legacy_hashes,
                **sizing,
                **self.tls,
            )
        if self.kind == "bloom":
            return BloomFilter(self.url, name, **sizing, **self.writes, **self.tls)
        if self.kind == "expanding":
            return ExpandingFilter(self.url, name, **sizing, **self.writes, **self.tls)
        f = CircularFilter(
            self.url,
            name,
            generations=self.generations,
            schedule=self.recrawl_every,
            mode=self.mode,
            lazy=True,
            clock=self.clock,
            **sizing,
            **self.writes,
            **self.tls,
        )
        f.rotate_if_due()
        return f


def _scrapy_redis_fingerprint(request):
    # The exact fingerprint scrapy-redis (and so scrapy-redis-bloomfilter)
    # stored, taken from that package rather than re-implemented.
    from scrapy_redis.dupefilter import RFPDupeFilter as ScrapyRedisDupeFilter

    return ScrapyRedisDupeFilter.request_fingerprint(None, request)


class RFPDupeFilter(BaseDupeFilter):
    """Drops requests whose fingerprint a rotabloom filter in Redis has
    seen; every process of a crawl shares the filter, and of concurrent
    processes seeing a new request exactly one lets it through."""

    def __init__(self, settings, fingerprinter=None, stats=None, spider_name=None):
        self.settings = settings
        self.fingerprinter = fingerprinter
        self.stats = stats
        self.debug = settings.debug
        self.logdupes = True
        self.filter = None
        if spider_name is not None:
            self.filter = settings.open(spider_name)

    @classmethod
    def from_crawler(cls, crawler):
        spider = getattr(crawler, "spider", None)
        return cls(
            FilterSettings(crawler.settings),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            spider_name=spider.name if spider is not None else None,
        )

    @classmethod
    def from_settings(cls, settings, fingerprinter=None):
        """Without a crawler: the spider's name is known at ``open``."""
        return cls(FilterSettings(settings), fingerprinter=fingerprinter)

    @classmethod
    def from_spider(cls, spider):
        """What ``scrapy_redis.scheduler.Scheduler`` calls."""
        crawler = spider.crawler
        return cls(
            FilterSettings(spider.settings),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            spider_name=spider.name,
        )

    def open(self, spider=None):
        if self.filter is None:
            if spider is None:
                raise InvalidParameterError("the dupefilter needs the spider's name for ROTABLOOM_KEY")
            self.filter = self.settings.open(spider.name)

    def fingerprint(self, request):
        """The item the filter holds for ``request``."""
        if self.settings.fingerprint == "scrapy-redis":
            return _scrapy_redis_fingerprint(request)
        if self.fingerprinter is None:
            from scrapy.utils.request import RequestFingerprinter

            self.fingerprinter = RequestFingerprinter()
        return self.fingerprinter.fingerprint(request)

    def request_seen(self, request):
        return not self.filter.check_and_insert(self.fingerprint(request))

    def clear(self):
        """Forgets every request (scrapy-redis's scheduler flush)."""
        self.filter.clear()

    def close(self, reason=""):
        # The connection closes with the filter object.
        self.filter = None

    def log(self, request, spider):
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
        stats = self.stats or getattr(getattr(spider, "crawler", None), "stats", None)
        if stats is not None:
            stats.inc_value("dupefilter/filtered")
