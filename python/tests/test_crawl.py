"""Real Scrapy crawls of the loopback site through the dupefilter."""

import json
import os
import subprocess
import sys

import pytest
import redis
from scrapy import Request

import rotabloom

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = 86400.0
# Some hours into a day: the circular tests' schedule is "1d".
T0 = 20000 * DAY + 3 * 3600.0


def start_crawl(site, redis_url, **settings):
    settings = {"START_URL": site.base + "/index", "ROTABLOOM_URL": redis_url, **settings}
    return subprocess.Popen(
        [sys.executable, os.path.join(HERE, "crawl.py"), json.dumps(settings)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc):
    """The crawl's stats, and its log (level WARNING) as ``"log"``."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    stats = json.loads(out.strip().splitlines()[-1])
    stats["log"] = err
    return stats


def crawl(site, redis_url, **settings):
    return finish(start_crawl(site, redis_url, **settings))


def assert_fetched(site, through_filter, starts=1):
    """Each path of `through_filter` fetched once, /index also once per
    crawl: the start request is dont_filter, as Scrapy makes it, so it is
    fetched whatever the filter says and is not recorded in it."""
    expected = {p: 1 for p in through_filter}
    expected["/index"] = expected.get("/index", 0) + starts
    counts = site.counts()
    wrong = {p: (n, expected.get(p, 0)) for p, n in counts.items() if expected.get(p) != n}
    missing = [p for p in expected if p not in counts]
    assert not wrong and not missing, f"(fetched, expected): {sorted(wrong.items())[:10]}, missing: {missing[:10]}"


def everything(site):
    return ["/index", *site.all_pages()]


def test_one_crawl_fetches_every_page_exactly_once(site, redis_url):
    stats = crawl(site, redis_url)
    assert_fetched(site, everything(site))
    assert stats["dupefilter/filtered"] > site.pages


def test_a_second_crawl_on_the_same_filter_fetches_nothing_new(site, redis_url):
    crawl(site, redis_url)
    site.reset()
    crawl(site, redis_url)
    assert_fetched(site, [])


def test_two_processes_at_once_fetch_every_page_once_in_total(site, redis_url):
    procs = [start_crawl(site, redis_url) for _ in range(2)]
    for p in procs:
        finish(p)
    assert_fetched(site, everything(site), starts=2)


def test_capacity_and_error_rate_as_text(site, redis_url):
    # As a settings.py string or `scrapy crawl -s` gives them.
    crawl(site, redis_url, ROTABLOOM_CAPACITY="10M", ROTABLOOM_ERROR_RATE="0.1%")
    assert_fetched(site, everything(site))
    p = rotabloom.open_filter(redis_url, "site:dupefilter").info()["parameters"]
    assert (p["capacity"], p["error_rate"]) == (10_000_000, 0.001)


SCRAPY_REDIS = {
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "ROTABLOOM_URL": None,
    # scrapy-redis's default, spelt out: its scheduler flushes at close.
    "SCHEDULER_PERSIST": False,
}


def test_scrapy_redis_scheduler_uses_the_dupefilter(site, redis_url):
    settings = {**SCRAPY_REDIS, "REDIS_URL": redis_url, "ROTABLOOM_KEY": "%(spider)s-sr"}
    crawl(site, redis_url, **settings)
    assert_fetched(site, everything(site))
    assert redis.Redis.from_url(redis_url).exists("rotabloom:{site-sr}:meta")


def test_a_scheduler_flush_never_wipes_the_window_silently(site, redis_url):
    window = {**SCRAPY_REDIS, "REDIS_URL": redis_url, "ROTABLOOM_RECRAWL_EVERY": "1d",
              "ROTABLOOM_CAPACITY": 10000}
    first = crawl(site, redis_url, **window)
    assert_fetched(site, everything(site))
    assert "the scheduler asked to clear the dupefilter 'site:dupefilter'" in first["log"]
    assert "kept it" in first["log"]
    site.reset()
    crawl(site, redis_url, **window)
    assert_fetched(site, [])
    # Clearing on close when asked for, and said.
    site.reset()
    cleared = crawl(site, redis_url, ROTABLOOM_CLEAR_ON_CLOSE=True, **window)
    assert "cleared the dupefilter 'site:dupefilter'" in cleared["log"]
    site.reset()
    crawl(site, redis_url, **window)
    assert_fetched(site, everything(site))


def test_circular_filter_forgets_after_the_window_and_not_before(site, redis_url):
    recrawl = {"ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_GENERATIONS": 2, "ROTABLOOM_CAPACITY": 10000}
    crawl(site, redis_url, TEST_CLOCK_NOW=T0, **recrawl)
    assert_fetched(site, everything(site))
    # Inside the window (the next period): nothing again.
    for now in (T0 + 3600, T0 + DAY):
        site.reset()
        crawl(site, redis_url, TEST_CLOCK_NOW=now, **recrawl)
        assert_fetched(site, [])
    # Two rotations after the first crawl's period: everything again, once.
    site.reset()
    crawl(site, redis_url, TEST_CLOCK_NOW=T0 + 2 * DAY, **recrawl)
    assert_fetched(site, everything(site))


def legacy_bitmap(site, redis_url):
    """A scrapy-redis-bloomfilter bitmap at ``site:bloomfilter`` holding
    half the pages; the paths it answers "seen" for."""
    from scrapy_redis.dupefilter import RFPDupeFilter as ScrapyRedisDupeFilter
    from scrapy_redis_bloomfilter.bloomfilter import BloomFilter as LegacyBloomFilter

    client = redis.Redis.from_url(redis_url)
    legacy = LegacyBloomFilter(client, "site:bloomfilter", bit=22, hash_number=6)

    def fp(path):
        return ScrapyRedisDupeFilter.request_fingerprint(None, Request(site.base + path))

    seen_before = site.all_pages()[: site.pages // 2]
    for path in seen_before:
        legacy.insert(fp(path))
    # The legacy filter's own answer decides, false positives included.
    legacy_says_seen = {p for p in everything(site) if legacy.exists(fp(p))}
    assert set(seen_before) <= legacy_says_seen
    assert len(legacy_says_seen) < site.pages
    return legacy_says_seen


def test_adopting_a_scrapy_redis_bloomfilter_key_keeps_what_it_had_seen(site, redis_url):
    client = redis.Redis.from_url(redis_url)
    legacy_says_seen = legacy_bitmap(site, redis_url)
    adopt = {"ROTABLOOM_ADOPT_KEY": "%(spider)s:bloomfilter", "BLOOMFILTER_BIT": 22}
    crawl(site, redis_url, **adopt)
    assert_fetched(site, [p for p in everything(site) if p not in legacy_says_seen])
    assert not client.exists("site:bloomfilter"), "the legacy key is moved into the filter"
    site.reset()
    crawl(site, redis_url, **adopt)
    assert_fetched(site, [])


def test_adopting_into_a_recrawl_window_ages_the_bitmap_out_with_the_window(site, redis_url):
    client = redis.Redis.from_url(redis_url)
    legacy_says_seen = legacy_bitmap(site, redis_url)
    window = {"ROTABLOOM_ADOPT_KEY": "%(spider)s:bloomfilter", "BLOOMFILTER_BIT": 22,
              "ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_GENERATIONS": 2,
              "ROTABLOOM_CAPACITY": 10000}
    # Adopted in the first period: what the bitmap holds is seen, as if
    # inserted then.
    crawl(site, redis_url, TEST_CLOCK_NOW=T0, **window)
    assert_fetched(site, [p for p in everything(site) if p not in legacy_says_seen])
    assert not client.exists("site:bloomfilter"), "moved, not copied"
    adopted = rotabloom.open_filter(redis_url, "site:dupefilter:legacy")
    assert adopted.info()["generations"][0]["memory_bytes"] > 0
    # One rotation later, still inside the window: nothing again.
    site.reset()
    crawl(site, redis_url, TEST_CLOCK_NOW=T0 + DAY, **window)
    assert_fetched(site, [])
    # Two rotations after the adoption both the bitmap and the first
    # crawl's generation are out of the window: everything, once.
    site.reset()
    crawl(site, redis_url, TEST_CLOCK_NOW=T0 + 2 * DAY, **window)
    assert_fetched(site, everything(site))
    assert adopted.info()["generations"][0]["memory_bytes"] == 0, "its bitmap is deleted"
    # A restart opens what was adopted (the key is gone) and fetches nothing.
    site.reset()
    crawl(site, redis_url, TEST_CLOCK_NOW=T0 + 2 * DAY + 60, **window)
    assert_fetched(site, [])
