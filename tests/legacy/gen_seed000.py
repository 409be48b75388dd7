#!/usr/bin/env python3
"""Write a legacy "seed-000" Bloom bitmap into Redis (blog.csdn.net/bone_ace/article/details/53107018).

This is the code of /work/shared/seeds/000_aef6a1ecd693cbbe.txt ported from Python 2 to Python 3.
The only behavioural port is md5: Python 2 fed a byte `str` to md5.update(); here a text value
is encoded as UTF-8 first (hashlib.md5(value.encode()).hexdigest()), which is what the Python 2
code did for UTF-8 byte strings. SimpleHash, the seeds [5, 7, 11, 13, 31, 37, 61], bit_size
1 << 31 and the block key `key + str(int(hexdigest[0:2], 16) % blockNum)` are unchanged.

Usage:
    python3 gen_seed000.py --url redis://127.0.0.1:7790/ --key bloomfilter --block-num 1 \
        --count 1000 --prefix item- [--start 0] [--out FILE] [--verify]

    Item i is f"{PREFIX}{i}" (the raw string handed to insert(); the MD5 is taken inside, as in
    the original). Items are printed one per line. --print-block prints "ITEM<TAB>BLOCKKEY".

    --bit N overrides bit_size = 1 << N (the original hard-codes 31; only for small experiments).

Memory: bit_size is 1 << 31 bits = 256 MiB. Redis allocates a block key's string up to the
highest offset set, so every block key reaches (almost) 256 MiB after a handful of inserts;
--block-num 4 means ~1 GiB of Redis memory. Use a throw-away redis-server.

Needs only the `redis` package (pip install redis).
"""

import argparse
import sys
from hashlib import md5


class SimpleHash(object):
    def __init__(self, cap, seed):
        self.cap = cap
        self.seed = seed

    def hash(self, value):
        ret = 0
        for i in range(len(value)):
            ret += self.seed * ret + ord(value[i])
        return (self.cap - 1) & ret


class BloomFilter(object):
    """seed-000 BloomFilter; takes a redis client instead of host/port/db (otherwise unchanged)."""

    def __init__(self, server, blockNum=1, key='bloomfilter', bit=31):
        self.server = server
        self.bit_size = 1 << bit  # original: 1 << 31 (256 MiB per block)
        self.seeds = [5, 7, 11, 13, 31, 37, 61]
        self.key = key
        self.blockNum = blockNum
        self.hashfunc = []
        for seed in self.seeds:
            self.hashfunc.append(SimpleHash(self.bit_size, seed))

    @staticmethod
    def _digest(str_input):
        m5 = md5()
        m5.update(str_input.encode('utf-8') if isinstance(str_input, str) else str_input)
        return m5.hexdigest()

    def block_name(self, str_input):
        return self.key + str(int(self._digest(str_input)[0:2], 16) % self.blockNum)

    def offsets(self, str_input):
        """(block key, [offset per seed]) exactly as insert() computes them."""
        str_input = self._digest(str_input)
        name = self.key + str(int(str_input[0:2], 16) % self.blockNum)
        return name, [f.hash(str_input) for f in self.hashfunc]

    def isContains(self, str_input):
        if not str_input:
            return False
        str_input = self._digest(str_input)
        ret = True
        name = self.key + str(int(str_input[0:2], 16) % self.blockNum)
        for f in self.hashfunc:
            loc = f.hash(str_input)
            ret = ret & self.server.getbit(name, loc)
        return ret

    def insert(self, str_input):
        str_input = self._digest(str_input)
        name = self.key + str(int(str_input[0:2], 16) % self.blockNum)
        for f in self.hashfunc:
            loc = f.hash(str_input)
            self.server.setbit(name, loc, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--key", default="bloomfilter", help="key prefix (block keys are KEY0, KEY1, ...)")
    ap.add_argument("--block-num", type=int, default=1)
    ap.add_argument("--bit", type=int, default=31, help="bit_size = 1 << bit; the original uses 31")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--prefix", default="item-")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--print-block", action="store_true", help="print ITEM<TAB>BLOCKKEY")
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.block_num < 1:
        ap.error("--block-num must be >= 1")
    if not 0 <= args.bit <= 32:
        ap.error("--bit must be in 0..32 (Redis bit offsets must be < 2^32)")

    import redis

    bf = BloomFilter(redis.Redis.from_url(args.url), blockNum=args.block_num, key=args.key, bit=args.bit)
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    items = []
    try:
        for i in range(args.start, args.start + args.count):
            item = f"{args.prefix}{i}"
            bf.insert(item)
            items.append(item)
            out.write(f"{item}\t{bf.block_name(item)}\n" if args.print_block else item + "\n")
    finally:
        if args.out:
            out.close()
    if args.verify:
        missing = [v for v in items if not bf.isContains(v)]
        if missing:
            raise SystemExit(f"verify failed: {len(missing)} inserted items not found, e.g. {missing[:3]}")
    print(f"seed-000: inserted {len(items)} items, key prefix {args.key!r}, blockNum={args.block_num}, "
          f"bit_size=1<<{args.bit}", file=sys.stderr)


if __name__ == "__main__":
    main()
