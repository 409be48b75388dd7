"""The dupefilter's settings and Scrapy interface, without a crawl."""

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
    df.clear()
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
    ],
)
def test_bad_settings_are_refused_before_connecting(settings):
    with pytest.raises(errors.InvalidParameterError):
        FilterSettings(Settings({"ROTABLOOM_URL": "redis://127.0.0.1:1/0", **settings}))


@pytest.mark.parametrize(
    "settings",
    [
        {"ROTABLOOM_CAPACITY": 0},
        {"ROTABLOOM_ERROR_RATE": 2},
        {"ROTABLOOM_KEY": "a*%(spider)s"},
        {"ROTABLOOM_RECRAWL_EVERY": "fortnightly"},
        {"ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_GENERATIONS": 1},
        {"ROTABLOOM_RECRAWL_EVERY": "1d", "ROTABLOOM_MODE": "sideways"},
        {"ROTABLOOM_URL": "ftp://example.com"},
        {"ROTABLOOM_WHEN_FULL": "grow"},
        {"ROTABLOOM_WAIT_REPLICAS": 0},
        {"ROTABLOOM_WAIT_TIMEOUT_MS": 50},
    ],
)
def test_bad_values_raise_invalid_parameter(redis_url, settings):
    with pytest.raises(errors.InvalidParameterError):
        dupefilter(redis_url, **settings)


def test_recrawl_settings_make_a_lazy_circular_filter(redis_url):
    df = dupefilter(redis_url, ROTABLOOM_RECRAWL_EVERY="12h", ROTABLOOM_GENERATIONS=3,
                    ROTABLOOM_MODE="insert-all-query-oldest")
    info = df.filter.info()
    assert info["kind"] == "circular" and len(info["generations"]) == 3
    assert df.filter.schedule == "12h"
    assert info["fields"].get("lazy") in ("1", "true")


def test_default_url_follows_scrapy_redis_settings():
    s = FilterSettings(Settings({"REDIS_HOST": "10.1.2.3", "REDIS_PORT": 7000}))
    assert s.url == "redis://10.1.2.3:7000"
    assert FilterSettings(Settings({"REDIS_URL": "redis://h:1/2"})).url == "redis://h:1/2"


def test_writes_wait_for_replicas_when_asked(redis_url):
    # The private server has no replica: a request that waits for one
    # raises the retryable ReplicasTimeoutError instead of being counted.
    df = dupefilter(redis_url, ROTABLOOM_KIND="bloom", ROTABLOOM_WAIT_REPLICAS=1,
                    ROTABLOOM_WAIT_TIMEOUT_MS=50)
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
