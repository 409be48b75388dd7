"""request_seen per second, memory per million fingerprints and wrongly
dropped new requests: rotabloom's dupefilter against scrapy-redis-
bloomfilter's and scrapy-redis's default RFPDupeFilter (a Redis SET), all
on one private redis-server, one request at a time as Scrapy calls them.

    python python/bench/dupefilter.py [--requests 100000] [--stored 1000000]

Install the release wheel first (scripts/wheel.sh, then pip install it). Not run by CI.
"""

import argparse
import os
import sys
import tempfile
import time

from scrapy import Request
from scrapy.utils.test import get_crawler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from redis_server import RedisServer  # noqa: E402


def requests(start, n):
    return (Request(f"http://example.com/item/{i}?page={i % 97}") for i in range(start, start + n))


def rotabloom_filter(url, client):
    from rotabloom.scrapy import RFPDupeFilter

    # p = 0.001, as the figures in README.md were measured (the default
    # is the library's 0.01).
    crawler = get_crawler(settings_dict={"ROTABLOOM_URL": url, "ROTABLOOM_KEY": "bench",
                                         "ROTABLOOM_ERROR_RATE": "0.1%"})
    df = RFPDupeFilter.from_crawler(crawler)

    class Spider:
        name = "bench"

    df.open(Spider())

    def fill(reqs):
        batch = []
        for r in reqs:
            batch.append(df.fingerprint(r))
            if len(batch) == 10000:
                df.filter.add_many(batch)
                batch = []
        if batch:
            df.filter.add_many(batch)

    return df, fill, lambda: df.filter.info()["memory_bytes"]


def scrapy_redis_filter(url, client):
    from scrapy_redis.dupefilter import RFPDupeFilter

    df = RFPDupeFilter(client, "bench:set", debug=False)

    def fill(reqs):
        pipe = client.pipeline(transaction=False)
        for i, r in enumerate(reqs, 1):
            pipe.sadd(df.key, df.request_fingerprint(r))
            if i % 10000 == 0:
                pipe.execute()
        pipe.execute()

    return df, fill, lambda: client.memory_usage(df.key, samples=0)


def scrapy_redis_bloomfilter_filter(url, client):
    from scrapy_redis_bloomfilter.defaults import BLOOMFILTER_BIT, BLOOMFILTER_HASH_NUMBER
    from scrapy_redis_bloomfilter.dupefilter import RFPDupeFilter

    # The package's defaults: 2^30 bits, 6 hashes.
    df = RFPDupeFilter(client, "bench:bloomfilter", False, BLOOMFILTER_BIT, BLOOMFILTER_HASH_NUMBER)

    def fill(reqs):
        # The package's own insert, pipelined: one round trip per bit would
        # take an hour for a million.
        pipe = client.pipeline(transaction=False)
        for i, r in enumerate(reqs, 1):
            fp = df.request_fingerprint(r)
            for m in df.bf.maps:
                pipe.setbit(df.key, m.hash(fp), 1)
            if i % 10000 == 0:
                pipe.execute()
        pipe.execute()

    return df, fill, lambda: client.memory_usage(df.key, samples=0)


CONTENDERS = {
    "rotabloom (expanding, p=0.001)": rotabloom_filter,
    "scrapy-redis-bloomfilter (2^30 bits, 6 hashes)": scrapy_redis_bloomfilter_filter,
    "scrapy-redis RFPDupeFilter (SET)": scrapy_redis_filter,
}


def run(name, make, server, n, stored):
    server.client.flushall()
    df, fill, memory = make(server.url, server.client)
    # Timed: n new requests, one request_seen each, as the scheduler calls it.
    reqs = list(requests(0, n))
    t = time.perf_counter()
    dropped_empty = sum(1 for r in reqs if df.request_seen(r))
    rate = n / (time.perf_counter() - t)
    fill(requests(n, stored - n))
    mem = memory()
    # n requests never seen, against `stored` fingerprints.
    dropped_full = sum(1 for r in requests(stored, n) if df.request_seen(r))
    return name, rate, mem * 1_000_000 / stored, dropped_empty, dropped_full


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=100_000)
    p.add_argument("--stored", type=int, default=1_000_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(tmp)
        try:
            print(f"| dupefilter | request_seen/s | memory per 1M fingerprints | new requests dropped of {args.requests:,} (empty) | (after {args.stored:,} stored) |")
            print("|---|---:|---:|---:|---:|")
            for name, make in CONTENDERS.items():
                name, rate, mem, d0, d1 = run(name, make, server, args.requests, args.stored)
                print(f"| {name} | {rate:,.0f} | {mem / 2**20:,.1f} MiB | {d0:,} | {d1:,} |", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
