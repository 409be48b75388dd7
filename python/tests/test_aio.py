"""rotabloom.aio against a real redis-server: the same answers and
exceptions as the blocking classes, exactly-once answers under 1,000
concurrent tasks, and cancelled calls that neither desynchronise the
shared connection nor stop half-way."""

import asyncio
import random

import pytest

import rotabloom
from rotabloom import aio, errors


def run(coro):
    return asyncio.run(coro)


def test_calls_answer_as_the_blocking_ones(redis_url):
    async def main():
        f = await aio.BloomFilter.create(redis_url, "aio-basic", capacity=10000, error_rate=0.001)
        assert isinstance(f, aio.BloomFilter) and f.kind == "bloom" and f.shards == 1
        assert await f.check_and_insert("a") is True
        assert await f.check_and_insert(b"a") is False, "str is its UTF-8 bytes"
        assert await f.contains("b") is False and await f.contains("a") is True
        assert await f.add("b") is True and await f.add("b") is False
        assert await f.add_many(["x", b"y", "x"]) == [True, True, False]
        assert await f.contains_many(iter(["x", "z"])) == [True, False]
        assert await f.check_and_insert_many(["n", "n", "x"]) == [True, False, False]
        assert await f.count() == 5
        info = await f.info()
        assert info == rotabloom.BloomFilter.open(redis_url, "aio-basic").info()
        with pytest.raises(TypeError):
            await f.add(3)
        with pytest.raises(TypeError):
            await f.add_many("abc")
        assert await f.drop() is True

    run(main())


def test_open_and_errors_are_the_blocking_classes(redis_url):
    rotabloom.CircularFilter(redis_url, "aio-win", generations=3, capacity=1000, schedule="7d")
    rotabloom.BloomFilter(redis_url, "aio-full", capacity=10)

    async def main():
        opened = await aio.open_filter(redis_url, "aio-win")
        assert isinstance(opened, aio.CircularFilter) and opened.schedule == "7d"
        assert (await aio.CircularFilter.open(redis_url, "aio-win")).name == "aio-win"
        with pytest.raises(errors.KindMismatchError):
            await aio.BloomFilter.open(redis_url, "aio-win")
        with pytest.raises(errors.NotFoundError):
            await aio.open_filter(redis_url, "absent")
        with pytest.raises(errors.ParameterMismatchError):
            await aio.BloomFilter.create(redis_url, "aio-full", capacity=20)
        full = await aio.BloomFilter.open(redis_url, "aio-full")
        assert await full.add_many(str(i) for i in range(10)) == [True] * 10
        with pytest.raises(errors.FullError) as e:
            await full.add("one more")
        assert e.value.retryable is False
        # Nothing written, and the connection still answers after the error.
        assert await full.contains("one more") is False
        assert await full.count() == 10

    run(main())


def test_a_thousand_tasks_get_one_true_per_item(redis_url):
    shared = [f"shared-{i}" for i in range(100)]

    async def main():
        f = await aio.ExpandingFilter.create(redis_url, "aio-race", capacity=200_000)

        async def task(t):
            mine = [f"own-{t}-{i}" for i in range(5)]
            items = shared + mine
            random.Random(t).shuffle(items)
            answers = await f.check_and_insert_many(items)
            one = await f.check_and_insert("one item for all")
            return dict(zip(items, answers)), one

        results = await asyncio.gather(*(task(t) for t in range(1000)))
        for item in shared:
            assert sum(r[item] for r, _ in results) == 1, item
        assert all(r[f"own-{t}-{i}"] for t, (r, _) in enumerate(results) for i in range(5))
        assert sum(one for _, one in results) == 1
        assert f.running == 0
        assert await f.count() == 100 + 5000 + 1

    run(main())


def test_a_cancelled_batch_runs_to_its_end_and_the_connection_stays_in_step(
    redis_server, redis_url
):
    big = [f"big-{i}" for i in range(20_000)]

    async def main():
        f = await aio.BloomFilter.create(
            redis_url, "aio-cancel", capacity=100_000, error_rate=1e-6)
        assert await f.add_many(["before-1", "before-2"]) == [True, True]
        # The server runs no write until unpaused (the timeout only bounds
        # a failed test): the batch is surely in flight when cancelled.
        redis_server.client.client_pause(60_000, all=False)
        try:
            batch = asyncio.ensure_future(f.check_and_insert_many(big))
            await asyncio.sleep(0)  # one step: the call is made
            assert f.running == 1
            batch.cancel()
            with pytest.raises(asyncio.CancelledError):
                await batch
            assert f.running == 1, "the call goes on"
        finally:
            redis_server.client.client_unpause()
        # The same object, the same connection, at once: each answer is its
        # own call's, not a reply left over from the cancelled batch.
        assert await f.contains_many(["before-1", "before-2", "never"]) == [True, True, False]
        assert await f.check_and_insert_many(["after-1", "after-2"]) == [True, True]
        await f.drain()
        assert f.running == 0
        # All of the cancelled batch is in.
        assert all(await f.contains_many(big))
        assert await f.check_and_insert_many(big[:100]) == [False] * 100

        # A task cancelled before its first step makes no call at all.
        unsent = [f"unsent-{i}" for i in range(10)]
        never = asyncio.ensure_future(f.add_many(unsent))
        never.cancel()
        with pytest.raises(asyncio.CancelledError):
            await never
        await f.drain()
        assert await f.contains_many(unsent) == [False] * 10

    run(main())


def test_many_batches_cancelled_at_random_points_leave_every_item_in(redis_url):
    async def main():
        # At this rate a new item is wrongly "seen" about once in 10^12
        # checks at the fill reached here, so every answer below is exact.
        f = await aio.BloomFilter.create(
            redis_url, "aio-chaos", capacity=200_000, error_rate=1e-6)
        rng = random.Random(7)
        batches = [[f"b{j}-{i}" for i in range(2000)] for j in range(40)]
        tasks = [asyncio.ensure_future(f.check_and_insert_many(b)) for b in batches]
        await asyncio.sleep(0)
        cancelled = set(rng.sample(range(40), 20))
        for j in sorted(cancelled):
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            tasks[j].cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        for j, out in enumerate(outcomes):
            if isinstance(out, asyncio.CancelledError):
                assert j in cancelled
            else:
                assert out == [True] * 2000, f"batch {j}: its items are all new"
        await f.drain()
        for b in batches:
            assert all(await f.contains_many(b))

    run(main())


def test_circular_rotations_share_the_blocking_handle(redis_url):
    clock = rotabloom.ManualClock(20000 * 86400 + 60)

    async def main():
        f = await aio.CircularFilter.create(
            redis_url, "aio-clocked", generations=2, capacity=1000, schedule="1d", clock=clock
        )
        await f.add("old")
        assert (await f.rotate_if_due())["result"] == "not_due"
        clock.advance(86400)
        r = await f.rotate_if_due()
        assert r["rotations"] == 1 and r["epoch"] == 1
        assert f.epoch == 1 == f.blocking.epoch, "the blocking object sees the rotation"
        assert await f.contains("old") is True, "still inside the window"
        clock.advance(86400)
        assert (await f.rotate_if_due())["rotations"] == 1
        assert await f.contains("old") is False
        assert (await f.rotate())["result"] == "rotated"
        assert (await f.info())["epoch"] == 3
        with pytest.raises(AttributeError):
            (await aio.BloomFilter.create(redis_url, "aio-plain", capacity=10)).rotate_if_due

    run(main())


def test_sharded_filters_over_a_cluster(cluster_url):
    items = [f"s-{i}" for i in range(3000)]

    async def main():
        f = await aio.BloomFilter.create(cluster_url, "aio-sharded", capacity=30_000, shards=3)
        assert f.shards == 3
        assert await f.check_and_insert_many(items) == [True] * 3000
        assert await f.check_and_insert_many(items[::7]) == [False] * len(items[::7])
        assert await f.check_and_insert("s-0") is False
        assert await f.count() == 3000
        info = await f.info()
        assert info["shards"] == 3 and info["items"] == 3000
        opened = await aio.open_filter(cluster_url, "aio-sharded")
        assert await opened.contains_many(items[:5]) == [True] * 5

    run(main())


def test_of_makes_the_class_of_the_kind(redis_url):
    blocking = rotabloom.ExpandingFilter(redis_url, "aio-of", capacity=1000)
    made = aio.Filter.of(blocking)
    assert type(made) is aio.ExpandingFilter and made.blocking is blocking
    with pytest.raises(TypeError):
        aio.BloomFilter(blocking)
    with pytest.raises(TypeError):
        aio.Filter(blocking)

    async def main():
        assert await made.add("x") is True
        assert blocking.contains("x"), "the same filter"
        assert await made.expand() is True
        assert len((await made.info())["generations"]) == 2

    run(main())


def test_an_object_connects_again_after_its_connection_was_killed(tmp_path):
    from redis_server import RedisServer

    server = RedisServer(tmp_path)
    try:
        async def main():
            f = await aio.BloomFilter.create(server.url, "re", capacity=1000)
            assert await f.add("a") is True
            server.client.client_kill_filter(_type="normal", skipme=True)
            # The killed connection fails one call at most, never silently.
            try:
                assert await f.add("b") is True
            except errors.RedisConnectionError as e:
                assert e.retryable
            assert await f.contains("a") is True
            assert await f.check_and_insert("c") is True

        run(main())
    finally:
        server.stop()


def test_a_lost_server_is_a_connection_error_without_the_password(tmp_path):
    from redis_server import RedisServer

    server = RedisServer(tmp_path, "--requirepass", "hunter2-secret")
    try:
        url = f"redis://:hunter2-secret@127.0.0.1:{server.port}/0"

        async def main():
            f = await aio.BloomFilter.create(url, "pw", capacity=1000)
            assert await f.add("a") is True
            assert "secret" not in f.url and "secret" not in repr(f)
            server.stop()
            with pytest.raises(errors.RedisConnectionError) as e:
                await f.check_and_insert_many(["b", "c"])
            assert e.value.retryable
            assert "secret" not in str(e.value) and "secret" not in repr(e.value)

        run(main())
    finally:
        server.stop()
