#!/usr/bin/env python3
"""Write a legacy `scrapy-redis-bloomfilter` bitmap into Redis, using the REAL package.

The offsets are produced by the installed package's own class
`scrapy_redis_bloomfilter.bloomfilter.BloomFilter` (PyPI `scrapy-redis-bloomfilter`,
verified against 0.8.1; 0.7.0 and 0.8.0 have the identical bloomfilter.py and 0.6.8 an equivalent one). Nothing here
re-implements the hash.

Setup (once):
    python3 -m venv /tmp/legacyvenv
    /tmp/legacyvenv/bin/pip install scrapy-redis-bloomfilter redis

Usage:
    /tmp/legacyvenv/bin/python gen_scrapy_redis_bloomfilter.py \
        --url redis://127.0.0.1:7790/ --key myspider:bloomfilter \
        --bit 30 --hash-number 6 --count 1000 --prefix item- [--start 0] [--out FILE]

    Item i (for i in start .. start+count-1) is the string f"{PREFIX}{i}", and that string is passed
    as-is to BloomFilter.insert(); it is also what is printed (one per line, stdout or --out).

    --fingerprints: treat f"{PREFIX}{i}" as a URL, build the request fingerprint of a plain GET
    to that URL (no body, no headers), insert the fingerprint (40 lowercase hex chars), and print
    the fingerprint. This is what the package's RFPDupeFilter.request_seen() hands to the filter.
    Add --print-source to print "FINGERPRINT<TAB>URL" instead.

    --fingerprint-style picks how the fingerprint is computed (the fingerprint depends on the
    version of scrapy-redis the legacy crawler ran, not on scrapy-redis-bloomfilter):
      installed  (default) call the installed scrapy_redis RFPDupeFilter.request_fingerprint on a
                 real scrapy.Request. With scrapy-redis >= 0.8.0 that is
                 sha1(json.dumps({"body": "", "method": "GET", "url": canonicalize_url(url)},
                 sort_keys=True).encode()).hexdigest(). Needs scrapy installed (it is a dependency
                 of scrapy-redis, so pip already installed it).
      json       the same scrapy-redis >= 0.8.0 formula evaluated here (w3lib canonicalize_url on
                 scrapy.Request(url).url); used to cross-check "installed".
      legacy     scrapy-redis <= 0.7.3, which used scrapy.utils.request.request_fingerprint of
                 Scrapy < 2.7: sha1(b"GET" + canonicalize_url(url).encode() + b"").hexdigest().
                 Recomputed here because Scrapy 2.19 no longer has that function.

    --verify: afterwards, call the package's BloomFilter.exists() on every inserted item and fail
    if any is reported absent.

The package's bit array lives in ONE Redis string key (SETBIT/GETBIT, one round trip per hash
function, no pipeline). With --bit 30 a key grows to 128 MiB as soon as a high offset is set.
"""

import argparse
import hashlib
import importlib.util
import json
import sys
import types


def load_package_bloomfilter():
    """Return the package's BloomFilter class without importing scrapy.

    `import scrapy_redis_bloomfilter.bloomfilter` normally runs the package __init__ (which
    imports the dupefilter and scheduler, hence scrapy_redis and scrapy/twisted). bloomfilter.py
    itself only needs `.defaults`, which needs `scrapy_redis.defaults` (which imports only
    `redis`). Registering the two packages as bare namespace modules skips both __init__ files,
    so the real bloomfilter.py and defaults.py files are executed and nothing else.
    """
    for name in ("scrapy_redis", "scrapy_redis_bloomfilter"):
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise SystemExit(f"{name} is not installed: pip install scrapy-redis-bloomfilter redis")
        pkg = types.ModuleType(name)
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules[name] = pkg
    from scrapy_redis_bloomfilter import bloomfilter  # the real module file

    return bloomfilter


def package_version():
    try:
        from importlib.metadata import version

        return version("scrapy-redis-bloomfilter")
    except Exception:  # pragma: no cover
        return "unknown"


def make_fingerprinter(style):
    """Return url -> 40-char hex fingerprint of a plain GET request to url."""
    if style == "installed":
        from scrapy import Request
        import scrapy_redis.dupefilter as srdf

        # request_fingerprint does not touch server/key; use the real method unchanged.
        df = srdf.RFPDupeFilter(server=None, key="unused")
        return lambda url: df.request_fingerprint(Request(url))
    if style == "json":
        from scrapy import Request
        from w3lib.url import canonicalize_url

        def fp_json(url):
            req = Request(url)
            data = {"method": "GET", "url": canonicalize_url(req.url), "body": b"".hex()}
            return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()

        return fp_json
    if style == "legacy":
        from scrapy import Request
        from w3lib.url import canonicalize_url

        def fp_legacy(url):
            req = Request(url)
            h = hashlib.sha1()
            h.update(b"GET")
            h.update(canonicalize_url(req.url).encode("utf-8"))
            h.update(req.body or b"")
            return h.hexdigest()

        return fp_legacy
    raise ValueError(style)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--key", required=True, help="bitmap key, e.g. SPIDER:bloomfilter")
    ap.add_argument("--bit", type=int, default=30, help="BLOOMFILTER_BIT (m = 1 << bit), default 30")
    ap.add_argument("--hash-number", type=int, default=6,
                    help="BLOOMFILTER_HASH_NUMBER (seeds 0..k-1), default 6")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--prefix", default="item-")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--fingerprints", action="store_true",
                    help="insert request fingerprints of GET f'{prefix}{i}' instead of the raw strings")
    ap.add_argument("--fingerprint-style", choices=["installed", "json", "legacy"], default="installed")
    ap.add_argument("--print-source", action="store_true",
                    help="with --fingerprints, print FINGERPRINT<TAB>URL")
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--out", help="write the items here instead of stdout")
    args = ap.parse_args(argv)

    if not 0 <= args.bit <= 32:
        ap.error("--bit must be in 0..32 (Redis bit offsets must be < 2^32)")

    import redis

    bfmod = load_package_bloomfilter()
    server = redis.Redis.from_url(args.url)
    bf = bfmod.BloomFilter(server, args.key, bit=args.bit, hash_number=args.hash_number)

    fingerprint = make_fingerprinter(args.fingerprint_style) if args.fingerprints else None

    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    inserted = []
    try:
        for i in range(args.start, args.start + args.count):
            raw = f"{args.prefix}{i}"
            value = fingerprint(raw) if fingerprint else raw
            bf.insert(value)
            inserted.append(value)
            if fingerprint and args.print_source:
                out.write(f"{value}\t{raw}\n")
            else:
                out.write(value + "\n")
    finally:
        if args.out:
            out.close()

    if args.verify:
        missing = [v for v in inserted if not bf.exists(v)]
        if missing:
            raise SystemExit(f"verify failed: {len(missing)} inserted items not found, e.g. {missing[:3]}")

    print(
        f"scrapy-redis-bloomfilter {package_version()} ({bfmod.__file__}): inserted {len(inserted)} "
        f"items into {args.key!r} bit={args.bit} hash_number={args.hash_number}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
