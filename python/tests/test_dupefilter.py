"""The dupefilter's settings and Scrapy interface, without a crawl."""

import logging

import pytest
from scrapy import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from rotabloom import errors
from rotabloom.scrapy import FilterSettings, RFPDupeFilter


class Spider:
    name = "spider"


def dupefilter(redis_url, **settings):
    crawler = get_crawler(settings_dict={"ROTABLOOM_URL": redis_url, **settings})
    df = RFPDupeFilter.from_crawler(crawler)
    df.open(Spider())
    return df


def test_request_seen_uses_scrapys_fingerprint(redis_url):
    df = dupefilter(redis_url)
    r = Request("http://example.com/a?b=1&a=2")
    assert df.request_seen(r) is False
    assert df.request_seen(Request("http://example.com/a?a=2&b=1")) is True
    assert len(df.fingerprint(r)) == 20
    df.filter.clear()
    assert df.request_seen(r) is False
    df.close("finished")


@pytest.mark.parametrize(
    "settings",
    [
        {"ROTABLOOM_KIND": "hyperloglog"},
        {"ROTABLOOM_CAPACITY": "lots"},
        {"ROTABLOOM_ERROR_RATE": "low"},
        {"ROTABLOOM_KIND": "circular"},
        {"ROTABLOOM_FINGERPRINT": "md5"},
        {"ROTABLOOM_ADOPT_KEY": "x", "ROTABLOOM_KIND": "bloom"},
        {"ROTABLOOM_CLOCK": "os.path"},
        {"ROTABLOOM_CAPACITY": 0},
        {"ROTABLOOM_ERROR_RATE": 2},
        {"ROTABLOOM_ERROR_RATE": "150%"},
        {"ROTABLOOM_KEY": "a*%(spider)s"},
        {"ROTABLOOM_RECRAWL_EVERY": "fortnightly"},
        {"ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_GENERATIONS": 1},
        {"ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_MODE": "sideways"},
        {"ROTABLOOM_WHEN_FULL": "grow"},
        {"ROTABLOOM_WAIT_REPLICAS": 0},
        {"ROTABLOOM_WAIT_TIMEOUT_MS": 50},
        {"ROTABLOOM_URL": "ftp://example.com"},
        {"ROTABLOOM_GROWTH": 2, "ROTABLOOM_RECRAWL_EVERY": "1d"},
        {"ROTABLOOM_CAPACTIY": "10M"},
    ],
)
def test_bad_settings_are_refused_before_connecting(settings):
    # Port 1: nothing listens there, so an error can only come from the
    # checks made before connecting.
    with pytest.raises(errors.InvalidParameterError):
        FilterSettings(Settings({"ROTABLOOM_URL": "redis://127.0.0.1:1/0", **settings}))


@pytest.mark.parametrize(
    "name, value, said",
    [
        ("ROTABLOOM_CAPACITY", "lots", "ROTABLOOM_CAPACITY: \"lots\" is not a whole number"),
        ("ROTABLOOM_ERROR_RATE", "low", "ROTABLOOM_ERROR_RATE: \"low\" is not a number"),
        ("ROTABLOOM_CAPACTIY", "1", "ROTABLOOM_CAPACTIY is not a rotabloom setting (did you mean ROTABLOOM_CAPACITY?)"),
        ("ROTABLOOM_GROWTH", "2", "ROTABLOOM_GROWTH is not a setting of a circular filter"),
    ],
)
def test_a_refusal_names_the_scrapy_setting(name, value, said):
    with pytest.raises(errors.InvalidParameterError) as e:
        FilterSettings(Settings({"ROTABLOOM_RECRAWL_EVERY": "1d", name: value}))
    assert str(e.value) == said


def test_settings_are_taken_as_text_the_way_the_command_line_takes_them(redis_url):
    # As settings.py strings, or `scrapy crawl -s NAME=VALUE`, give them.
    df = dupefilter(redis_url, ROTABLOOM_CAPACITY="10M", ROTABLOOM_ERROR_RATE="0.1%",
                    ROTABLOOM_MAX_GENERATIONS="8", ROTABLOOM_MAX_BYTES="1GiB")
    p = df.filter.info()["parameters"]
    assert (p["capacity"], p["error_rate"], p["max_generations"], p["max_bytes"]) == (
        10_000_000, 0.001, 8, 1 << 30)
    window = dupefilter(redis_url, ROTABLOOM_KEY="w", ROTABLOOM_RECRAWL_EVERY="12h",
                        ROTABLOOM_GENERATIONS="3", ROTABLOOM_CAPACITY="1e4", ROTABLOOM_LAZY="False")
    p = window.filter.info()["parameters"]
    assert (p["generations"], p["capacity"], p["lazy"]) == (3, 10_000, False)
    # A bloom filter's explicit shape, instead of the default capacity.
    shaped = dupefilter(redis_url, ROTABLOOM_KEY="b", ROTABLOOM_KIND="bloom",
                        ROTABLOOM_BITS="64k", ROTABLOOM_HASHES="7")
    g = shaped.filter.info()["generations"][0]
    assert (g["bits"], g["hashes"]) == (64_000, 7)


def test_the_defaults_are_the_command_lines(redis_url):
    p = dupefilter(redis_url).filter.info()["parameters"]
    assert p["error_rate"] == 0.01 and p["capacity"] == 1_000_000


def test_a_filter_made_with_other_settings_says_which_setting_keeps_it(redis_url):
    import rotabloom

    rotabloom.ExpandingFilter(redis_url, "spider:dupefilter", capacity=1_000_000, error_rate=0.001)
    with pytest.raises(errors.ParameterMismatchError) as e:
        dupefilter(redis_url)
    assert "set ROTABLOOM_ERROR_RATE = '0.001' to keep the filter" in str(e.value)
    assert dupefilter(redis_url, ROTABLOOM_ERROR_RATE="0.1%").request_seen(Request("http://a/")) is False


def test_a_scheduler_flush_keeps_the_filter_unless_asked(redis_url, caplog):
    r = Request("http://example.com/kept")
    df = dupefilter(redis_url, ROTABLOOM_RECRAWL_EVERY="1d")
    assert df.request_seen(r) is False
    with caplog.at_level(logging.WARNING, logger="rotabloom.scrapy"):
        df.clear()
    assert df.request_seen(r) is True, "the window was wiped"
    assert "kept it" in caplog.text and "ROTABLOOM_CLEAR_ON_CLOSE" in caplog.text
    caplog.clear()
    df = dupefilter(redis_url, ROTABLOOM_RECRAWL_EVERY="1d", ROTABLOOM_CLEAR_ON_CLOSE=True)
    with caplog.at_level(logging.WARNING, logger="rotabloom.scrapy"):
        df.clear()
    assert "cleared the dupefilter 'spider:dupefilter' (1 requests seen)" in caplog.text
    assert df.request_seen(r) is False


def test_recrawl_settings_make_a_lazy_circular_filter(redis_url):
    df = dupefilter(redis_url, ROTABLOOM_RECRAWL_EVERY="12h", ROTABLOOM_GENERATIONS=3,
                    ROTABLOOM_MODE="insert-all-query-oldest")
    info = df.filter.info()
    assert info["kind"] == "circular" and len(info["generations"]) == 3
    assert df.filter.schedule == "12h"
    assert info["parameters"]["lazy"] is True


def test_default_url_follows_scrapy_redis_settings():
    s = FilterSettings(Settings({"REDIS_HOST": "10.1.2.3", "REDIS_PORT": 7000}))
    assert s.url == "redis://10.1.2.3:7000"
    assert FilterSettings(Settings({"REDIS_URL": "redis://h:1/2"})).url == "redis://h:1/2"


def test_writes_wait_for_replicas_when_asked(redis_url):
    # The private server has no replica: a request that waits for one
    # raises the retryable ReplicasTimeoutError instead of being counted.
    df = dupefilter(redis_url, ROTABLOOM_KIND="bloom", ROTABLOOM_WAIT_REPLICAS=1,
                    ROTABLOOM_WAIT_TIMEOUT_MS="50")
    with pytest.raises(errors.ReplicasTimeoutError):
        df.request_seen(Request("http://example.com/w"))


def test_the_dupefilter_takes_the_tls_settings(tls_server):
    server, files = tls_server
    df = dupefilter(
        f"rediss://127.0.0.1:{server.port}/0",
        ROTABLOOM_TLS_CA_FILE=files.ca,
        ROTABLOOM_TLS_CERT_FILE=files.client_cert,
        ROTABLOOM_TLS_KEY_FILE=files.client_key,
    )
    assert df.request_seen(Request("https://example.com/tls")) is False
    assert df.request_seen(Request("https://example.com/tls")) is True
    df.close("finished")
