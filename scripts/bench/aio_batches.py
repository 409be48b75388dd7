"""Items per second of check_and_insert_many in batches of 1,000, in one
run on one private redis-server: the blocking Python class, rotabloom.aio
(one and two batches in flight on one object), and the Rust library's
async API (examples/async_batches.rs, one and two in flight). Each row is
the median of --runs runs, the rows interleaved so that a change in the
machine's load touches them alike; the load average is printed with them.

    python scripts/bench/aio_batches.py --rust target/release/examples/async_batches

Needs rotabloom installed (scripts/wheel.sh) in the Python that runs it;
run by scripts/bench.sh --aio.
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python", "tests"))
from redis_server import RedisServer  # noqa: E402

import rotabloom  # noqa: E402
from rotabloom import aio  # noqa: E402


def batches(tag, items, size):
    return [[f"{tag}-{i}" for i in range(b, min(b + size, items))]
            for b in range(0, items, size)]


def blocking(url, name, tag, items, size):
    f = rotabloom.BloomFilter.open(url, name)
    work = batches(tag, items, size)
    start = time.perf_counter()
    for b in work:
        f.check_and_insert_many(b)
    return items / (time.perf_counter() - start)


def asyncio_rows(url, name, tag, items, size, in_flight):
    async def main():
        f = await aio.BloomFilter.open(url, name)
        await f.contains("warm")  # the connection, made before the clock starts
        work = batches(tag, items, size)
        queue = iter(work)

        async def worker():
            for b in queue:
                await f.check_and_insert_many(b)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return items / (time.perf_counter() - start)

    return asyncio.run(main())


def rust(binary, url, name, items, size, in_flight):
    out = subprocess.run([binary, url, name, str(items), str(size), str(in_flight)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rust", help="the built examples/async_batches binary")
    p.add_argument("--items", type=int, default=100_000, help="items per run")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()

    rows = {
        "python sync": lambda url, name, tag: blocking(url, name, tag, args.items, args.batch),
        "python aio x1": lambda url, name, tag: asyncio_rows(
            url, name, tag, args.items, args.batch, 1),
        "python aio x2": lambda url, name, tag: asyncio_rows(
            url, name, tag, args.items, args.batch, 2),
    }
    if args.rust:
        for n in (1, 2):
            rows[f"rust async x{n}"] = (
                lambda url, name, tag, n=n: rust(args.rust, url, name, args.items, args.batch, n))

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(tmp)
        try:
            results = {row: [] for row in rows}
            for run in range(args.runs):
                for k, (row, fn) in enumerate(rows.items()):
                    name = f"bench-{run}-{k}"
                    # A fresh filter per run: every item is new, the same
                    # work for every row.
                    rotabloom.BloomFilter(server.url, name, capacity=args.items * 2)
                    results[row].append(fn(server.url, name, f"{run}-{k}"))
                    server.client.delete(*server.client.keys(f"*{name}*"))
        finally:
            server.stop()

    base = statistics.median(results["python sync"])
    print(f"check_and_insert_many, batches of {args.batch:,}, {args.items:,} items a run, "
          f"median of {args.runs} runs; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    for row, values in results.items():
        m = statistics.median(values)
        print(f"  {row:<16} {m:>12,.0f} items/s  {m / base:5.2f}x sync")


if __name__ == "__main__":
    main()
