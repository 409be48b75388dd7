#!/usr/bin/env python3
"""Throughput of the seeds' package, scrapy-redis-bloomfilter, for benches/compare.rs.

Measures, against the Redis server at --url, on a fresh key each run:

* ``insert``: ``BloomFilter.insert(item)`` for every item (one SETBIT round
  trip per hash function);
* ``request_seen``: the package's ``RFPDupeFilter.request_seen`` pattern,
  ``if bf.exists(item): seen; else: bf.insert(item)`` (one GETBIT round trip
  per hash function, then one SETBIT per hash function for a new item). The
  request fingerprint (SHA1 of the canonical request) is not computed: the
  item itself is the fingerprint, as on the rotabloom side.

Items are the bench's URL-like items, ``https://example.com/path/{i}``. The
bitmap (``2**bit`` bits) is allocated before the clock starts, as rotabloom
allocates its blocks when a filter is created.

Prints one JSON object on stdout: per-run items/s for both operations, how
many items request_seen reported as new (the package's hashes are weak, so
some new items look seen and skip the insert), and versions.
"""

import argparse
import json
import platform
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="redis://127.0.0.1:PORT/DB")
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bit", type=int, default=None, help="m = 2**bit (default: the package's, 30)")
    ap.add_argument("--hashes", type=int, default=None, help="hash functions (default: the package's, 6)")
    ap.add_argument("--key", default="seed:bench:bloomfilter")
    args = ap.parse_args()

    try:
        import redis
        from scrapy_redis_bloomfilter import defaults
        from scrapy_redis_bloomfilter.bloomfilter import BloomFilter
    except ImportError as e:  # reported as JSON so the Rust side can show it
        print(json.dumps({"error": "import failed: %s" % e}))
        return 0

    try:
        from importlib.metadata import version

        pkg_version = version("scrapy-redis-bloomfilter")
        redis_py = version("redis")
    except Exception:  # pragma: no cover - metadata missing
        pkg_version = redis_py = "unknown"

    bit = defaults.BLOOMFILTER_BIT if args.bit is None else args.bit
    hashes = defaults.BLOOMFILTER_HASH_NUMBER if args.hashes is None else args.hashes
    server = redis.Redis.from_url(args.url)
    items = ["https://example.com/path/%d" % i for i in range(args.items)]

    def fresh_filter():
        server.delete(args.key)
        # Allocate the whole bitmap now, outside the timed loop.
        server.setbit(args.key, (1 << bit) - 1, 0)
        return BloomFilter(server, args.key, bit, hashes)

    insert_rates, seen_rates, new_counts = [], [], []
    for _ in range(args.runs):
        bf = fresh_filter()
        t0 = time.perf_counter()
        for it in items:
            bf.insert(it)
        insert_rates.append(len(items) / (time.perf_counter() - t0))

        bf = fresh_filter()
        new = 0
        t0 = time.perf_counter()
        for it in items:
            # RFPDupeFilter.request_seen, with the item as the fingerprint.
            if bf.exists(it):
                continue
            bf.insert(it)
            new += 1
        seen_rates.append(len(items) / (time.perf_counter() - t0))
        new_counts.append(new)
    server.delete(args.key)

    print(
        json.dumps(
            {
                "package": "scrapy-redis-bloomfilter",
                "package_version": pkg_version,
                "redis_py_version": redis_py,
                "python": platform.python_version(),
                "bit": bit,
                "hashes": hashes,
                "items": len(items),
                "runs": args.runs,
                "insert_items_per_s": insert_rates,
                "request_seen_items_per_s": seen_rates,
                "request_seen_new": new_counts,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
