"""Fixtures: a private redis-server on a free loopback port (never 6379),
and a small site served on loopback that counts every fetch."""

import os
import shutil
import socket
import subprocess
import time

import pytest
import redis

from site_server import Site


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server process of our own, stopped by its PID."""

    def __init__(self, tmp_path, *args):
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (scripts/ensure-redis.sh installs it)")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(tmp_path), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.exceptions.AuthenticationError:
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    pytest.fail("redis-server did not start")
                time.sleep(0.05)

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


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
