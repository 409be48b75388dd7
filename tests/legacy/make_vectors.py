#!/usr/bin/env python3
"""Compute the test vectors of docs/LEGACY.md with the real legacy Python code.

    /tmp/legacyvenv/bin/python tests/legacy/make_vectors.py [--out tests/legacy/vectors.json]

No Redis is needed: the real BloomFilter classes are given a recording stand-in for the redis
client, so the offsets and key names are exactly the arguments their insert() passes to SETBIT.
  * scheme "scrapy-redis-bloomfilter": the installed package's bloomfilter.BloomFilter.
  * scheme "seed-000": gen_seed000.BloomFilter (the seed-000 code ported to Python 3).
Every vector is cross-checked against an independent re-implementation that uses only 64-bit
wrapping arithmetic (what Rust's u64::wrapping_mul / wrapping_add do), and the 64-bit
equivalence is additionally checked on random strings for every bit width 0..64.
"""

import argparse
import hashlib
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gen_scrapy_redis_bloomfilter import load_package_bloomfilter, make_fingerprinter, package_version  # noqa: E402
import gen_seed000  # noqa: E402

MASK64 = (1 << 64) - 1


class RecordingServer:
    """Stands in for redis.Redis; records SETBIT calls, answers GETBIT from what was set."""

    def __init__(self):
        self.calls = []
        self.bits = set()

    def setbit(self, name, offset, value):
        self.calls.append((name, offset, value))
        self.bits.add((name, offset))
        return 0

    def getbit(self, name, offset):
        return 1 if (name, offset) in self.bits else 0


def wrap64_poly(value, multiplier):
    """h = 0; for each code point c: h = h*multiplier + c  (mod 2^64)."""
    h = 0
    for ch in value:
        h = (h * multiplier + ord(ch)) & MASK64
    return h


def scrapy_wrap64(value, bit, k):
    mask = (1 << bit) - 1
    return [wrap64_poly(value, s + 1) & mask for s in range(k)]


def seed000_wrap64(item, key, block_num):
    hx = hashlib.md5(item.encode("utf-8")).hexdigest()
    name = key + str(int(hx[0:2], 16) % block_num)
    return name, [wrap64_poly(hx, s + 1) & ((1 << 31) - 1) for s in (5, 7, 11, 13, 31, 37, 61)]


def self_check_equivalence(trials=2000):
    """Python's unbounded result masked to `bit` bits == 64-bit wrapping result masked, bit <= 64."""
    rng = random.Random(1234)
    alphabet = "abcdef0123456789/:.?=&%-_ABCXYZ~" + "\u00e9\u4f8b\u5b50\U0001F600"
    for _ in range(trials):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))
        seed = rng.randint(0, 70)
        big = 0
        for ch in s:
            big += seed * big + ord(ch)  # the exact legacy statement
        w = wrap64_poly(s, seed + 1)
        for bit in range(0, 65):
            assert big & ((1 << bit) - 1) == w & ((1 << bit) - 1), (s, seed, bit)
    return trials


def scrapy_vector(bfmod, item, bit, k):
    server = RecordingServer()
    key = "myspider:bloomfilter"
    bf = bfmod.BloomFilter(server, key, bit=bit, hash_number=k)
    bf.insert(item)
    assert all(c[0] == key and c[2] == 1 for c in server.calls)
    offsets = [c[1] for c in server.calls]
    assert offsets == scrapy_wrap64(item, bit, k), item
    exists = bool(bf.exists(item))
    return {
        "item": item,
        "bit": bit,
        "hash_number": k,
        "seeds": list(range(k)),
        "offsets": offsets,
        "exists_after_insert": exists,
    }


def seed000_vector(item, key, block_num):
    server = RecordingServer()
    bf = gen_seed000.BloomFilter(server, blockNum=block_num, key=key)
    assert bf.bit_size == 1 << 31
    bf.insert(item)
    names = {c[0] for c in server.calls}
    assert len(names) == 1
    name = names.pop()
    offsets = [c[1] for c in server.calls]
    assert (name, offsets) == seed000_wrap64(item, key, block_num), item
    return {
        "item": item,
        "md5_hex": hashlib.md5(item.encode("utf-8")).hexdigest(),
        "key_prefix": key,
        "block_num": block_num,
        "block_key": name,
        "offsets": offsets,
        "is_contains_after_insert": bool(bf.isContains(item)),
    }


SCRAPY_CASES = [
    ("http://example.com/page/1", 30, 6),
    # request fingerprint (scrapy-redis >= 0.8.0) of GET https://www.baidu.com/s?wd=0
    ("8e7f80913230debca7264dfb3c055dcda5aaf9f8", 30, 6),
    ("Hello", 5, 6),
    # 120 chars: the Python integer grows far past 2^64 for seeds >= 1
    ("https://www.example.org/catalogue/category/books/travel_2/index.html?page=17&sort=price&utm_source=crawler&session=ABCDEF",
     32, 8),
    ("https://例子.测试/路径?q=é😀", 30, 6),
    ("", 30, 6),
]

SEED000_CASES = [
    ("http://www.baidu.com", "bloomfilter", 1),
    ("http://example.com/page/1", "bloomfilter", 5),
    ("8e7f80913230debca7264dfb3c055dcda5aaf9f8", "crawler:bf:", 3),
    ("https://例子.测试/路径?q=é😀", "bloomfilter", 7),
    ("", "bf", 2),
]


FINGERPRINT_URLS = [
    "https://www.baidu.com/s?wd=0",
    "http://example.com/page/1",
    "http://www.example.com/query?id=111&cat=222",
    "http://www.example.com/query?cat=222&id=111#frag",
    "HTTP://Example.COM/a b/é?x=1&x=0",
]


def fingerprint_vectors():
    """Request fingerprints of plain GET requests (what request_seen() passes to the filter)."""
    from scrapy import Request
    from w3lib.url import canonicalize_url

    inst, js, leg = (make_fingerprinter(s) for s in ("installed", "json", "legacy"))
    out = []
    for url in FINGERPRINT_URLS:
        a, b = inst(url), js(url)
        assert a == b, url
        out.append({
            "url": url,
            "canonical_url": canonicalize_url(Request(url).url),
            "fp_scrapy_redis_ge_0_8": a,
            "fp_legacy_scrapy_redis_le_0_7": leg(url),
        })
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "vectors.json"))
    args = ap.parse_args()

    bfmod = load_package_bloomfilter()
    n = self_check_equivalence()
    doc = {
        "generated_by": "tests/legacy/make_vectors.py",
        "scrapy_redis_bloomfilter_version": package_version(),
        "equivalence_self_check_random_strings": n,
        "scrapy_redis_bloomfilter": [scrapy_vector(bfmod, *c) for c in SCRAPY_CASES],
        "seed000": [seed000_vector(*c) for c in SEED000_CASES],
        "request_fingerprints": fingerprint_vectors(),
    }
    text = json.dumps(doc, ensure_ascii=False, indent=2)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
