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


def _openssl(directory, *args):
    try:
        out = subprocess.run(["openssl", *args], cwd=directory, capture_output=True)
    except FileNotFoundError:
        raise ServerError("openssl is not installed (scripts/ensure-redis.sh installs it)")
    if out.returncode != 0:
        raise ServerError(f"openssl {' '.join(args)}: {out.stderr.decode(errors='replace')}")


class TlsFiles:
    """A CA, a server certificate for 127.0.0.1 and a client certificate it
    signed, and a second CA that signed neither: PEM files in `directory`,
    made with openssl."""

    def __init__(self, directory):
        d = str(directory)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for ca in ("ca", "other-ca"):
            _openssl(d, "req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                     "-days", "2", "-subj", f"/CN=rotabloom test {ca}",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        exts = {
            "server": "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
            "client": "extendedKeyUsage=clientAuth\n",
        }
        for who, ext in exts.items():
            with open(os.path.join(d, f"{who}.ext"), "w") as f:
                f.write(ext + "basicConstraints=CA:FALSE\n")
            _openssl(d, "req", *ec, "-keyout", f"{who}.key", "-out", f"{who}.csr",
                     "-subj", f"/CN=rotabloom test {who}")
            _openssl(d, "x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                     "-CAcreateserial", "-out", f"{who}.crt", "-days", "2",
                     "-extfile", f"{who}.ext")
        path = lambda name: os.path.join(d, name)
        self.ca, self.other_ca = path("ca.crt"), path("other-ca.crt")
        self.server_cert, self.server_key = path("server.crt"), path("server.key")
        self.client_cert, self.client_key = path("client.crt"), path("client.key")


class RedisServer:
    """A redis-server process of our own, stopped by its PID. With `tls`
    (TlsFiles), it listens with TLS only and requires client
    certificates."""

    def __init__(self, tmp_path, *args, tls=None, port=None):
        # REDIS_SERVER overrides the binary, as for the Rust tests.
        binary = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
        if binary is None:
            raise ServerError("redis-server is not installed (scripts/ensure-redis.sh installs it)")
        self.port = port or free_port()
        ports = ["--port", str(self.port)]
        if tls is not None:
            ports = ["--port", "0", "--tls-port", str(self.port),
                     "--tls-cert-file", tls.server_cert, "--tls-key-file", tls.server_key,
                     "--tls-ca-cert-file", tls.ca, "--tls-auth-clients", "yes"]
        self.proc = subprocess.Popen(
            [binary, *ports, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(tmp_path), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if tls is None:
            self.client = redis.Redis(host="127.0.0.1", port=self.port)
        else:
            self.client = redis.Redis(host="127.0.0.1", port=self.port, ssl=True,
                                      ssl_ca_certs=tls.ca, ssl_certfile=tls.client_cert,
                                      ssl_keyfile=tls.client_key)
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


class RedisCluster:
    """A private 3-master, 0-replica Redis Cluster on loopback: three
    cluster-enabled redis-server processes of our own (stopped by their
    PIDs), joined with `redis-cli --cluster create`."""

    def __init__(self, tmp_path, masters=3):
        self.nodes = []
        try:
            for i in range(masters):
                d = os.path.join(str(tmp_path), f"node{i}")
                os.makedirs(d, exist_ok=True)
                # The cluster bus listens on port + 10000: pick ports
                # where both are free.
                self.nodes.append(RedisServer(d, "--cluster-enabled", "yes",
                                              "--cluster-config-file", "nodes.conf",
                                              "--cluster-node-timeout", "5000",
                                              port=_free_cluster_port()))
            cli = os.environ.get("REDIS_CLI") or shutil.which("redis-cli")
            if cli is None:
                raise ServerError("redis-cli is not installed (scripts/ensure-redis.sh installs it)")
            addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
            out = subprocess.run([cli, "--cluster", "create", *addrs, "--cluster-replicas", "0",
                                  "--cluster-yes"], stdin=subprocess.DEVNULL, capture_output=True)
            if out.returncode != 0:
                raise ServerError(f"redis-cli --cluster create failed: {out.stdout!r} {out.stderr!r}")
            self._wait_until_ok()
        except BaseException:
            self.stop()
            raise

    def _wait_until_ok(self):
        deadline = time.monotonic() + 20
        while True:
            if all(self._ok(n) for n in self.nodes):
                return
            if time.monotonic() > deadline:
                raise ServerError("the cluster did not report cluster_state:ok within 20s")
            time.sleep(0.05)

    def _ok(self, node):
        info = node.client.execute_command("CLUSTER", "INFO")
        if isinstance(info, bytes):
            info = info.decode()
        fields = dict(line.split(":", 1) for line in info.split() if ":" in line)
        return (fields.get("cluster_state") == "ok"
                and fields.get("cluster_slots_assigned") == "16384"
                and fields.get("cluster_known_nodes") == str(len(self.nodes)))

    @property
    def url(self):
        """The rotabloom URL of the cluster: every node as a seed."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def flushall(self):
        for n in self.nodes:
            n.client.flushall()

    def stop(self):
        for n in self.nodes:
            n.stop()


def _free_cluster_port():
    for _ in range(100):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise ServerError("no free port with a free cluster bus port")
