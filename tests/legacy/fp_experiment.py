#!/usr/bin/env python3
"""False-positive experiment for both legacy schemes, against a throw-away Redis.

    redis-server --port 7790 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes
    /tmp/legacyvenv/bin/python tests/legacy/fp_experiment.py --url redis://127.0.0.1:7790/ [--n 10000]
    redis-cli -p 7790 shutdown nosave

Inserts N distinct items with the REAL insert() of each scheme, then asks the REAL
exists()/isContains() about N *other* distinct items (never inserted) and counts how many are
reported present (false positives). Also prints, per hash function, how many distinct offsets the
inserted items produced and how often a fresh item's bit for that function was already set,
which is what explains the result. Uses keys prefixed "fpexp:" and deletes them afterwards
(bit=30 keys are 128 MiB, seed-000 blocks 256 MiB).
"""

import argparse
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gen_scrapy_redis_bloomfilter import load_package_bloomfilter, make_fingerprinter, package_version  # noqa: E402
import gen_seed000  # noqa: E402


def theoretical_fp(m, k, n):
    return (1.0 - math.exp(-k * n / m)) ** k


def per_hash_stats(offsets_fn, k, inserted, fresh):
    """offsets_fn(item) -> list of k offsets. Returns [(distinct offsets among inserted, frac fresh hit)]."""
    sets = [set() for _ in range(k)]
    for it in inserted:
        for j, o in enumerate(offsets_fn(it)):
            sets[j].add(o)
    hits = [0] * k
    for it in fresh:
        for j, o in enumerate(offsets_fn(it)):
            # a fresh item's bit j is set if ANY function put a 1 there
            if any(o in s for s in sets):
                hits[j] += 1
    return [(len(sets[j]), hits[j] / len(fresh)) for j in range(k)]


def run(label, make_bf, insert, contains, offsets_fn, k, m, inserted, fresh, server, keys):
    for key in keys:
        server.delete(key)
    bf = make_bf()
    t = time.time()
    for it in inserted:
        insert(bf, it)
    missing = sum(1 for it in inserted if not contains(bf, it))
    fp = sum(1 for it in fresh if contains(bf, it))
    bitcount = sum(server.bitcount(key) for key in keys)
    stats = per_hash_stats(offsets_fn, k, inserted, fresh)
    res = {
        "label": label,
        "inserted": len(inserted),
        "fresh_queried": len(fresh),
        "false_positives": fp,
        "fp_rate": fp / len(fresh),
        "theoretical_fp_rate_ideal_hashes": theoretical_fp(m, k, len(inserted)),
        "inserted_not_found": missing,
        "bits_set": bitcount,
        "ideal_bits_set_approx": round(m * (1 - math.exp(-k * len(inserted) / m))),
        "per_hash": stats,
        "seconds": round(time.time() - t, 1),
    }
    for key in keys:
        server.delete(key)
    return res


def simulate_request_seen(label, make_bf, seen, add, items, server, keys):
    """Feed `items` (all distinct) through the dupefilter logic: `if exists: drop else insert`.

    Returns how many distinct items were wrongly dropped as duplicates."""
    for key in keys:
        server.delete(key)
    bf = make_bf()
    dropped = 0
    for it in items:
        if seen(bf, it):
            dropped += 1
        else:
            add(bf, it)
    for key in keys:
        server.delete(key)
    return {"label": label, "distinct_items": len(items), "wrongly_dropped": dropped}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    import redis

    server = redis.Redis.from_url(args.url)
    bfmod = load_package_bloomfilter()
    n = args.n
    BIT, K = 30, 6
    m = 1 << BIT
    maps = [bfmod.HashMap(m, s) for s in range(K)]  # the package's own hash objects

    def pkg_offsets(v):
        return [h.hash(v) for h in maps]

    s0 = gen_seed000.BloomFilter(None)

    def s0_offsets(v):
        return s0.offsets(v)[1]

    # Two ways to pick the never-inserted ("fresh") items:
    #  "disjoint": insert i in [0, n), query i in [n, 2n). For n=10000 every fresh URL is one
    #              character longer than every inserted one, which (see the per-hash stats) hides
    #              the problem for raw URLs.
    #  "disjoint, same length": insert i in [n, 2n), query i in [2n, 3n) (for n=10000 all
    #              five-digit numbers).
    #  "random":   shuffle [0, 2n) with a fixed RNG seed, insert the first n, query the other n,
    #              so inserted and fresh items have the same shapes and lengths.
    order = list(range(2 * n))
    random.Random(42).shuffle(order)
    ins_rand, fresh_rand = sorted(order[:n]), sorted(order[n:])
    page = lambda i: f"http://example.com/page/{i}"
    query = lambda i: f"https://shop.example.net/search?q=item{i}&page=1"
    families = {
        "page, disjoint": (page, range(0, n), range(n, 2 * n)),
        "page, disjoint same length": (page, range(n, 2 * n), range(2 * n, 3 * n)),
        "page, random": (page, ins_rand, fresh_rand),
        "query, random": (query, ins_rand, fresh_rand),
    }
    fpr = make_fingerprinter("installed")
    results = []
    for fam, (mk, ins_r, fresh_r) in families.items():
        ins = [mk(i) for i in ins_r]
        fresh = [mk(i) for i in fresh_r]
        key = "fpexp:pkg"
        results.append(run(
            f"scrapy-redis-bloomfilter {package_version()} bit={BIT} k={K}, raw URLs ({fam}: insert {ins[0]}, {ins[1]} ..; query {fresh[0]}, {fresh[1]} ..)",
            lambda: bfmod.BloomFilter(server, key, bit=BIT, hash_number=K),
            lambda bf, v: bf.insert(v), lambda bf, v: bool(bf.exists(v)),
            pkg_offsets, K, m, ins, fresh, server, [key]))
        ins_fp = [fpr(u) for u in ins]
        fresh_fp = [fpr(u) for u in fresh]
        results.append(run(
            f"scrapy-redis-bloomfilter {package_version()} bit={BIT} k={K}, request fingerprints of the {fam} URLs "
            f"(what request_seen() hashes)",
            lambda: bfmod.BloomFilter(server, key, bit=BIT, hash_number=K),
            lambda bf, v: bf.insert(v), lambda bf, v: bool(bf.exists(v)),
            pkg_offsets, K, m, ins_fp, fresh_fp, server, [key]))
        results.append(run(
            f"seed-000 (md5 hex, seeds 5,7,11,13,31,37,61, 1<<31, blockNum=1), raw URLs ({fam})",
            lambda: gen_seed000.BloomFilter(server, blockNum=1, key="fpexp:s0:"),
            lambda bf, v: bf.insert(v), lambda bf, v: bool(bf.isContains(v)),
            s0_offsets, 7, 1 << 31, ins, fresh, server, ["fpexp:s0:0"]))

    # What a crawler experiences: request_seen() = exists-then-insert on a stream of distinct URLs.
    crawl = []
    stream = [page(i) for i in order]  # 2n distinct URLs in random order
    for lbl, items in (("raw URLs /page/0..2n-1, random order", stream),
                       ("raw URLs /page/0..2n-1, ascending", sorted(stream, key=lambda u: int(u.rsplit("/", 1)[1]))),
                       ("request fingerprints of the same URLs, random order", [fpr(u) for u in stream])):
        crawl.append(simulate_request_seen(
            f"scrapy-redis-bloomfilter bit={BIT} k={K}: {lbl}",
            lambda: bfmod.BloomFilter(server, "fpexp:crawl", bit=BIT, hash_number=K),
            lambda bf, v: bool(bf.exists(v)), lambda bf, v: bf.insert(v), items, server, ["fpexp:crawl"]))
    crawl.append(simulate_request_seen(
        "seed-000 blockNum=1: raw URLs /page/0..2n-1, random order",
        lambda: gen_seed000.BloomFilter(server, blockNum=1, key="fpexp:s0:"),
        lambda bf, v: bool(bf.isContains(v)), lambda bf, v: bf.insert(v), stream, server, ["fpexp:s0:0"]))

    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"fresh_query": results, "request_seen_stream": crawl}, f, indent=1)
    for r in results:
        print(f"\n== {r['label']}")
        print(f"   inserted {r['inserted']}, queried {r['fresh_queried']} never-inserted items: "
              f"{r['false_positives']} false positives ({100 * r['fp_rate']:.2f}%), "
              f"ideal-hash expectation {r['theoretical_fp_rate_ideal_hashes']:.3g}; "
              f"inserted-but-missing {r['inserted_not_found']}")
        print(f"   bits set {r['bits_set']} (ideal hashes ~{r['ideal_bits_set_approx']}), {r['seconds']} s")
        for j, (distinct, frac) in enumerate(r["per_hash"]):
            print(f"   hash #{j}: {distinct} distinct offsets over the inserted items; "
                  f"{100 * frac:.1f}% of fresh items hit an already-set bit")

    for c in crawl:
        print(f"\n== request_seen() stream: {c['label']}")
        print(f"   {c['distinct_items']} distinct items, {c['wrongly_dropped']} wrongly dropped as duplicates "
              f"({100 * c['wrongly_dropped'] / c['distinct_items']:.2f}%)")


if __name__ == "__main__":
    main()
