"""Sharded filters (``shards=``) from Python against a real 3-master
Redis Cluster, checked with the rotabloom command line."""

import json
import os
import shutil
import subprocess

import pytest

import rotabloom
from rotabloom import errors


def rotabloom_cli(url, *args):
    """Runs the rotabloom command (ROTABLOOM_BIN, else on PATH) and returns
    its completed process; scripts/test-python.sh builds it."""
    binary = os.environ.get("ROTABLOOM_BIN") or shutil.which("rotabloom")
    assert binary, "set ROTABLOOM_BIN to the rotabloom command (scripts/test-python.sh does)"
    return subprocess.run([binary, "--redis", url, *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def status_json(url, name):
    out = rotabloom_cli(url, "status", "--json", name)
    assert out.returncode == 0, out
    (doc,) = json.loads(out.stdout)["filters"]
    return doc


def test_six_shards_made_in_python_are_one_sharded_filter(redis_cluster, cluster_url):
    f = rotabloom.BloomFilter(cluster_url, "py6", capacity=6000, error_rate=0.001, shards=6)
    assert f.shards == 6 and f.kind == "bloom"
    items = [f"https://example.com/{i}" for i in range(600)]
    assert f.check_and_insert_many(items) == [True] * 600
    assert f.check_and_insert_many(items) == [False] * 600, "no item new twice"
    assert f.contains_many(items) == [True] * 600, "no false negative"
    assert f.add("single") is True and f.check_and_insert("single") is False
    assert "single" in f and f.contains("absent-item") is False
    assert f.add_many(["x", "x"]) == [True, False]
    assert f.count() == 602

    doc = status_json(cluster_url, "py6")
    assert doc["shards"] == 6 and doc["kind"] == "bloom" and doc["items"] == 602
    assert len(doc["shard_filters"]) == 6
    assert len({s["master"] for s in doc["shard_filters"]}) >= 2, "spread over masters"

    info = f.info()
    assert info["shards"] == 6 and info["items"] == 602
    assert [s["shard"] for s in info["shard_filters"]] == list(range(6))
    assert sum(s["items"] for s in info["shard_filters"]) == 602
    assert info["capacity"] == doc["capacity"]

    opened = rotabloom.open_filter(cluster_url, "py6")
    assert isinstance(opened, rotabloom.BloomFilter) and opened.shards == 6
    assert opened.contains_many(items[:50]) == [True] * 50

    # Same settings: opened; other ones: refused, never a silent reuse.
    assert rotabloom.BloomFilter(cluster_url, "py6", capacity=6000, error_rate=0.001,
                                 shards=6).count() == 602
    with pytest.raises(errors.ParameterMismatchError):
        rotabloom.BloomFilter(cluster_url, "py6", capacity=6000, error_rate=0.001, shards=3)

    assert f.drop() is True
    with pytest.raises(errors.NotFoundError):
        rotabloom.open_filter(cluster_url, "py6")
    left = [k for n in redis_cluster.nodes for k in n.client.keys("rotabloom:*")]
    assert left == [], "drop removed every shard and the root"


def test_python_opens_a_filter_the_command_line_sharded(cluster_url):
    out = rotabloom_cli(cluster_url, "create", "clish", "--kind", "expanding",
                        "--capacity", "3000", "--shards", "3")
    assert out.returncode == 0 and "3 shards" in out.stdout, out
    f = rotabloom.ExpandingFilter.open(cluster_url, "clish")
    assert f.shards == 3 and f.kind == "expanding"
    assert f.check_and_insert_many(["a", "b", "c", "a"]) == [True, True, True, False]
    assert f.expand() is True, "a generation added to every shard"
    assert all(len(s["generations"]) == 2 for s in f.info()["shard_filters"])
    assert f.contains_many(["a", "b", "c"]) == [True] * 3
    out = rotabloom_cli(cluster_url, "check", "clish", "a", "b", "c", "d")
    assert out.returncode == 0 and out.stdout.split() == ["a", "b", "c"], out
    with pytest.raises(errors.KindMismatchError):
        rotabloom.BloomFilter.open(cluster_url, "clish")


def test_sharded_circular_rotates_every_shard(cluster_url):
    f = rotabloom.CircularFilter(cluster_url, "pyring", generations=2, capacity=300,
                                 shards=3)
    assert f.add_many(["old1", "old2"]) == [True, True]
    r = f.rotate()
    assert r["result"] == "rotated" and r["rotations"] == 1 and r["epoch"] == 1
    assert [s["result"] for s in r["shard_results"]] == ["rotated"] * 3
    assert f.epoch == 1
    assert f.contains_many(["old1", "old2"]) == [True, True], "inside the window"
    f.rotate()
    assert f.contains_many(["old1", "old2"]) == [False, False], "forgotten at N"
    doc = status_json(cluster_url, "pyring")
    assert all(s["epoch"] == 2 for s in doc["shard_filters"])
    f.add("new")
    f.clear()
    assert f.count() == 0


def test_shards_refused_with_bits_and_hashes(cluster_url):
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.BloomFilter(cluster_url, "shape", bits=8192, hashes=4, shards=2)


def test_adopting_into_a_sharded_name_is_refused(cluster_url):
    rotabloom.BloomFilter(cluster_url, "adoptsh", capacity=600, shards=2)
    with pytest.raises(errors.RotabloomError) as caught:
        rotabloom.ExpandingFilter.adopt_legacy(cluster_url, "adoptsh", "legacy:bf",
                                               capacity=1000)
    message = str(caught.value)
    assert "sharded" in message and "re-routed" in message, message
    assert rotabloom.open_filter(cluster_url, "adoptsh").shards == 2, "left as it was"


def test_a_full_shard_refuses_only_its_own_items(redis_url):
    """Issue 28: a sharded batch keeps every shard's answers when one
    fails; the exception names the refused items (one plain server)."""
    f = rotabloom.BloomFilter(redis_url, "pyfull3", capacity=300, shards=3)
    items = [f"https://full.example/{i}" for i in range(600)]
    with pytest.raises(errors.PartialError) as caught:
        f.check_and_insert_many(items)
    e = caught.value
    assert e.retryable is False
    assert len(e.answers) == 600 and e.unknown == []
    assert e.refused == [i for i, a in enumerate(e.answers) if a is None]
    new = [items[i] for i, a in enumerate(e.answers) if a is True]
    assert 450 <= len(new) <= 480, "each shard holds 160 (rounded up)"
    assert f.count() == len(new), "stored: exactly the items answered new"
    assert f.contains_many(new) == [True] * len(new)
    assert sorted(i for s in e.failures for i in s[1]) == e.refused
    assert {s[2] for s in e.failures} == {"refused"}
    assert {s[3] for s in e.failures} == {"FullError"}
    refused_in = sum(f.contains_many([items[i] for i in e.refused]))
    assert refused_in <= len(e.refused) // 20
