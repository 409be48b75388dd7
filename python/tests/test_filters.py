"""The filter classes against a real redis-server."""

import logging
import threading

import pytest
import redis

import rotabloom
from rotabloom import errors


def test_check_and_insert_says_new_once(redis_url):
    f = rotabloom.BloomFilter(redis_url, "basic", capacity=10000, error_rate=0.001)
    assert f.check_and_insert("a") is True
    assert f.check_and_insert("a") is False
    assert f.check_and_insert(b"a") is False, "str is its UTF-8 bytes"
    assert f.contains("b") is False and "a" in f
    assert f.add_many(["x", b"y", "x"]) == [True, True, False]
    assert f.contains_many(iter(["x", "z"])) == [True, False]
    assert f.check_and_insert_many(["n", "n", "x"]) == [True, False, False]
    assert f.count() == 4


def test_info_has_numbers_as_numbers(redis_url):
    f = rotabloom.ExpandingFilter(redis_url, "info", capacity=1000, error_rate=0.01)
    f.add_many(str(i) for i in range(10))
    info = f.info()
    assert info["kind"] == "expanding" and info["name"] == "info"
    assert info["items"] == 10
    assert isinstance(info["memory_bytes"], int) and info["memory_bytes"] > 0
    assert 0 <= info["false_positive_rate"] < 0.01
    assert info["generations"][0]["capacity"] == 1000


def test_create_or_open_and_open(redis_url):
    made = rotabloom.CircularFilter.create_or_open(
        redis_url, "win", generations=3, capacity=1000, schedule="7d"
    )
    assert made.schedule == "7d"
    opened = rotabloom.open_filter(redis_url, "win")
    assert isinstance(opened, rotabloom.CircularFilter)
    assert rotabloom.CircularFilter.open(redis_url, "win").name == "win"
    with pytest.raises(errors.KindMismatchError):
        rotabloom.BloomFilter.open(redis_url, "win")
    with pytest.raises(errors.NotFoundError):
        rotabloom.open_filter(redis_url, "absent")


def test_manual_clock_drives_rotation(redis_url):
    clock = rotabloom.ManualClock(20000 * 86400 + 60)
    f = rotabloom.CircularFilter(
        redis_url, "clocked", generations=2, capacity=1000, schedule="1d", clock=clock
    )
    f.add("old")
    assert f.rotate_if_due()["result"] == "not_due"
    clock.advance(86400)
    assert f.rotate_if_due()["rotations"] == 1
    assert "old" in f, "still inside the window"
    clock.advance(86400)
    assert f.rotate_if_due()["rotations"] == 1
    assert "old" not in f
    assert f.rotate()["result"] == "rotated"


def test_eight_threads_on_one_object_get_each_new_item_once(redis_url):
    f = rotabloom.BloomFilter(redis_url, "threads", capacity=100000, error_rate=0.0001)
    items = [f"http://example.com/{i}" for i in range(2000)]
    new = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def work(offset):
        mine = []
        start.wait()
        # Each thread in another order, so they race on every item.
        for item in items[offset:] + items[:offset]:
            if f.check_and_insert(item):
                mine.append(item)
        with lock:
            new.extend(mine)

    threads = [threading.Thread(target=work, args=(k * 250,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(new) == sorted(items)


@pytest.mark.parametrize("bad", [3, None, 1.5, ["a"], object()])
def test_items_other_than_str_or_bytes_raise_type_error(redis_url, bad):
    f = rotabloom.BloomFilter(redis_url, "types", capacity=1000)
    with pytest.raises(TypeError):
        f.add(bad)
    with pytest.raises(TypeError):
        f.check_and_insert_many(["fine", bad])
    assert f.count() == 0, "a bad item in a batch leaves the filter unchanged"


def test_a_string_is_not_taken_for_a_batch(redis_url):
    f = rotabloom.BloomFilter(redis_url, "batch", capacity=1000)
    with pytest.raises(TypeError):
        f.add_many("abc")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"capacity": 0},
        {"capacity": 1000, "error_rate": 1.5},
        {"capacity": 1000, "bits": 1024},
        {"capacity": 1000, "backend": "floppy"},
    ],
)
def test_bad_settings_raise_invalid_parameter(redis_url, kwargs):
    with pytest.raises(errors.InvalidParameterError) as e:
        rotabloom.BloomFilter(redis_url, "bad", **kwargs)
    assert isinstance(e.value, ValueError)


def test_bad_names_urls_and_modes(redis_url):
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.BloomFilter(redis_url, "a*b", capacity=1000)
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.BloomFilter("http://nowhere", "a", capacity=1000)
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.CircularFilter(redis_url, "m", generations=2, capacity=10, mode="sideways")
    with pytest.raises(ValueError):
        rotabloom.ManualClock(float("nan"))


def test_other_settings_on_an_existing_filter_are_a_mismatch(redis_url):
    rotabloom.BloomFilter(redis_url, "same", capacity=1000)
    with pytest.raises(errors.ParameterMismatchError):
        rotabloom.BloomFilter(redis_url, "same", capacity=2000)
    with pytest.raises(errors.KindMismatchError):
        rotabloom.ExpandingFilter(redis_url, "same", capacity=1000)


def test_a_key_of_another_type_is_wrong_type(redis_server, redis_url):
    redis_server.client.set("rotabloom:{taken}:meta", "x")
    with pytest.raises(errors.WrongTypeError):
        rotabloom.BloomFilter(redis_url, "taken", capacity=1000)


def test_an_expanding_filter_at_its_limit_raises_limit_reached(redis_url):
    f = rotabloom.ExpandingFilter(redis_url, "full", capacity=10, max_generations=1)
    with pytest.raises(errors.LimitReachedError):
        for i in range(10000):
            f.add(str(i))


def test_when_full_refuses_by_default_and_writes_on_with_warn(redis_url):
    full = rotabloom.BloomFilter(redis_url, "wf", capacity=100, error_rate=0.001)
    full.add_many([f"a{i}" for i in range(100)])
    with pytest.raises(errors.FullError):
        full.add("one more")
    assert not full.contains("one more")
    warn = rotabloom.BloomFilter.open(redis_url, "wf", when_full="warn")
    assert warn.check_and_insert("one more")
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.BloomFilter.open(redis_url, "wf", when_full="grow")


def test_a_batch_that_fills_the_filter_keeps_the_answers_it_was_given(redis_url):
    """Issue 28: the items handled before the generation filled were
    written; their answers come with the error, never lost."""
    f = rotabloom.BloomFilter(redis_url, "fill", capacity=100, error_rate=0.001)
    assert f.check_and_insert_many([f"a{i}" for i in range(80)]) == [True] * 80
    batch = [f"a{i}" for i in range(70, 130)]
    with pytest.raises(errors.FullError) as caught:
        f.check_and_insert_many(batch)
    answered = caught.value.answered
    # a70..a79 seen, then new ones up to the capacity of 100.
    assert answered == [False] * 10 + [True] * 20, answered
    assert f.count() == 100
    assert f.contains_many(batch[: len(answered)]) == [True] * len(answered)
    with pytest.raises(errors.FullError) as again:
        f.add("one more")
    assert again.value.answered == [], "full before the call: nothing handled"


def test_warnings_reach_python_logging(redis_url, caplog):
    # A filter over capacity with when_full="warn" writes on and warns once,
    # through Python's logging, under the "rotabloom" logger.
    f = rotabloom.BloomFilter(
        redis_url, "lw", capacity=10, error_rate=0.001, when_full="warn"
    )
    with caplog.at_level(logging.WARNING, logger="rotabloom"):
        f.add_many([f"a{i}" for i in range(30)])
    warnings = [
        r for r in caplog.records
        if r.name.startswith("rotabloom") and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert "over its capacity" in warnings[0].getMessage()
    assert "lw" in warnings[0].getMessage()


def test_a_blocked_call_lets_other_python_threads_run(redis_server, redis_url):
    # The call waits on a paused server; another Python thread must run
    # meanwhile (it sees the call blocked on the server, then lifts the
    # pause), which it can only do if the call released the GIL. Holding
    # it, the call would return only when the pause ran out, with the
    # helper never having seen it blocked.
    f = rotabloom.BloomFilter(redis_url, "gil", capacity=1000)
    f.add("warm")
    admin = redis.Redis(host="127.0.0.1", port=redis_server.port)
    seen = threading.Event()
    done = threading.Event()

    def helper():
        while not done.is_set():
            blocked = [
                c for c in admin.client_list()
                if "b" in c.get("flags", "") and c.get("cmd", "") in ("evalsha", "eval")
            ]
            if blocked:
                seen.set()
                admin.execute_command("CLIENT", "UNPAUSE")
                return

    admin.execute_command("CLIENT", "PAUSE", 20000, "WRITE")
    t = threading.Thread(target=helper)
    try:
        t.start()
        assert f.check_and_insert("while paused")
    finally:
        done.set()
        admin.execute_command("CLIENT", "UNPAUSE")
        t.join()
    assert seen.is_set(), "no other thread ran while the call was blocked"


def test_writes_that_wait_for_a_missing_replica_raise_replicas_timeout(redis_url):
    # The private server has no replica: a write that waits for one times
    # out (retryable), the write itself is on the server; reads never wait.
    f = rotabloom.BloomFilter(
        redis_url, "wr", capacity=1000, wait_replicas=1, wait_timeout_ms=50
    )
    with pytest.raises(errors.ReplicasTimeoutError) as e:
        f.add("x")
    assert e.value.retryable
    assert f.contains("x")
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.BloomFilter(redis_url, "wr", capacity=1000, wait_timeout_ms=50)


def test_connection_errors_name_no_password(tmp_path):
    from redis_server import RedisServer

    server = RedisServer(tmp_path, "--requirepass", "hunter2-secret")
    try:
        for url in (
            f"redis://:wrong-secret@127.0.0.1:{server.port}/0",
            f"redis://:hunter2-secret@127.0.0.1:{server.port}/0",
        ):
            if "hunter2" in url:
                f = rotabloom.BloomFilter(url, "pw", capacity=1000)
                server.stop()
                with pytest.raises(errors.RedisConnectionError) as e:
                    f.add("a")
            else:
                with pytest.raises(errors.RotabloomError) as e:
                    rotabloom.BloomFilter(url, "pw", capacity=1000)
            assert "secret" not in str(e.value)
            assert "secret" not in repr(e.value)
    finally:
        server.stop()
    with pytest.raises(errors.RedisConnectionError) as e:
        rotabloom.BloomFilter(f"redis://:p4ss-word@127.0.0.1:{server.port}/0", "pw", capacity=1000)
    assert "p4ss" not in str(e.value) and e.value.retryable


def test_a_filter_object_reconnects_after_the_server_comes_back(tmp_path):
    from redis_server import RedisServer

    server = RedisServer(tmp_path)
    f = rotabloom.BloomFilter(server.url, "re", capacity=1000)
    assert f.add("a")
    server.client.client_kill_filter(_type="normal", skipme=True)
    # The killed connection fails once at most; the object connects again.
    try:
        f.add("b")
    except errors.RedisConnectionError:
        pass
    assert "a" in f
    server.stop()



def test_tls_with_a_private_ca_and_a_client_certificate(tls_server):
    server, files = tls_server
    url = f"rediss://127.0.0.1:{server.port}/0"
    mutual = {"tls_ca_file": files.ca, "tls_cert_file": files.client_cert,
              "tls_key_file": files.client_key}
    f = rotabloom.BloomFilter(url, "tls", capacity=1000, **mutual)
    assert f.check_and_insert("a")
    assert rotabloom.Filter.open(url, "tls", **mutual).contains("a")
    # The server asks for a client certificate: without one, no session.
    with pytest.raises(errors.RedisConnectionError):
        rotabloom.Filter.open(url, "tls", tls_ca_file=files.ca)
    # A CA that did not sign the server's certificate: refused.
    with pytest.raises(errors.RedisConnectionError):
        rotabloom.Filter.open(url, "tls", **{**mutual, "tls_ca_file": files.other_ca})
    # Without the private CA, the system's trust store does not know it.
    with pytest.raises(errors.RedisConnectionError):
        rotabloom.Filter.open(url, "tls", tls_cert_file=files.client_cert,
                              tls_key_file=files.client_key)


def test_tls_settings_are_checked_before_connecting(tls_server, tmp_path):
    server, files = tls_server
    plain = f"redis://127.0.0.1:{server.port}/0"
    url = f"rediss://127.0.0.1:{server.port}/0"
    bad = [
        (plain, {"tls_ca_file": files.ca}),  # TLS files with a plain-text URL
        (url, {"tls_cert_file": files.client_cert}),  # a certificate without its key
        (url, {"tls_ca_file": str(tmp_path / "missing.pem")}),
        (url, {"tls_ca_file": files.client_key}),  # not a certificate
    ]
    for u, kwargs in bad:
        with pytest.raises(errors.InvalidParameterError):
            rotabloom.BloomFilter(u, "tls-bad", capacity=1000, **kwargs)

