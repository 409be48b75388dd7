"""A redis-server process of our own on a free loopback port (never
6379), stopped by its PID; for the tests and the benchmark."""

import os
import shutil
import socket
import subprocess
import time

import redis


class ServerError(RuntimeError):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server process of our own, stopped by its PID."""

    def __init__(self, tmp_path, *args):
        # REDIS_SERVER overrides the binary, as for the Rust tests.
        binary = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
        if binary is None:
            raise ServerError("redis-server is not installed (scripts/ensure-redis.sh installs it)")
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
                    raise ServerError("redis-server did not start")
                time.sleep(0.05)

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
