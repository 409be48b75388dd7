"""Fixtures: a private redis-server on a free loopback port (never 6379),
and a small site served on loopback that counts every fetch."""

import os

import pytest

from redis_server import RedisCluster, RedisServer, TlsFiles
from site_server import Site


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    redis_server.client.flushall()
    return redis_server.url


@pytest.fixture
def site():
    s = Site(pages=int(os.environ.get("ROTABLOOM_TEST_PAGES", "300")))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory):
    """A private TLS-only server that requires client certificates, and
    its certificate files."""
    files = TlsFiles(tmp_path_factory.mktemp("tls-files"))
    server = RedisServer(tmp_path_factory.mktemp("tls-redis"), tls=files)
    yield server, files
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A private 3-master Redis Cluster (see redis_server.RedisCluster)."""
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture
def cluster_url(redis_cluster):
    redis_cluster.flushall()
    return redis_cluster.url
