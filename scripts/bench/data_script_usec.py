#!/usr/bin/env python3
"""Server cost of the data script (src/lua/data.lua), two versions compared.

    scripts/bench/data_script_usec.py REV batch OP ITEMS_PER_CALL CALLS ROUNDS
    scripts/bench/data_script_usec.py REV single OP rec|norec

REV is a git revision whose data.lua is the "before"; the worktree's is the
"after". Starts a private redis-server (free loopback port, no persistence,
stopped by PID) per run and sends EVALSHA calls with the arguments rotabloom
sends for a base filter of 10M at p = 0.001 (k = 10, 3 blocks), decision
group only, random offsets (the server's work does not depend on the
hashing). OP: add, cai or has. `batch` alternates the two versions ROUNDS
times (CALLS pipelined calls each) and prints server CPU (INFO cpu) and
EVALSHA time (INFO commandstats) per item, medians; `single` sends one-item
calls one at a time, both versions on one server, in alternating blocks of
200, and prints EVALSHA µs per call and the median paired ratio. No
third-party package: a minimal RESP client. docs/BENCHMARKS.md gives figures.
"""
import os, random, signal, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BITS = 47925292            # block bits of the bench's base filter
SIZE = (BITS + 7) // 8
K, NB = 10, 3


def enc(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port))
        self.f = self.s.makefile('rb')

    def send(self, cmds):
        self.s.sendall(b''.join(enc(c) for c in cmds))
        return [self.read() for _ in cmds]

    def call(self, *a):
        return self.send([list(a)])[0]

    def read(self):
        line = self.f.readline()[:-2]
        t, rest = line[:1], line[1:]
        if t == b'+':
            return rest.decode()
        if t == b'-':
            return RuntimeError(rest.decode())
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if t == b'*':
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError(line)


class Server:
    def __init__(self):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        self.port = s.getsockname()[1]
        s.close()
        self.dir = tempfile.mkdtemp(prefix='rotabloom-lua.')
        subprocess.check_call(['redis-server', '--port', str(self.port), '--bind', '127.0.0.1',
                               '--save', '', '--appendonly', 'no', '--dir', self.dir,
                               '--daemonize', 'yes', '--pidfile', self.dir + '/pid'],
                              stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                self.c = Conn(self.port)
                if self.c.call('PING') == 'PONG':
                    break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self):
        with open(self.dir + '/pid') as f:
            os.kill(int(f.read()), signal.SIGTERM)

    def cpu(self):
        kv = dict(l.split(':', 1) for l in self.c.call('INFO', 'cpu').decode().splitlines() if ':' in l)
        return float(kv['used_cpu_user']) + float(kv['used_cpu_sys'])

    def evalsha(self):
        for l in self.c.call('INFO', 'commandstats').decode().splitlines():
            if l.startswith('cmdstat_evalsha:'):
                kv = dict(x.split('=') for x in l.split(':', 1)[1].split(','))
                return int(kv['calls']), int(kv['usec'])
        return 0, 0

    def setup(self, sources):
        shas = [self.c.call('SCRIPT', 'LOAD', src).decode() for src in sources]
        self.c.call('HSET', 'm', 'uid', 'U', 'epoch', 0)
        self.c.call('SET', 'f', 'U:0:0')
        for b in range(NB):
            self.c.call('SETRANGE', 'b%d' % b, SIZE - 1, '\0')
        return shas


def call(sha, op, items, first, record):
    """EVALSHA as src/proto/script.rs builds it: one decide group."""
    touched = sorted(set(b for b, _ in items))
    keys = ['m', 'f', 'r'] + ['b%d' % b for b in touched] + ([record] if record else [])
    args = [op, 'U', 0, 0, len(items), '', '', 1, first, 300000 if record else '', '',
            'd', 0, K, len(touched), 0, '=%d' % SIZE]
    for b, ps in items:
        args.append(touched.index(b))
        args.extend(ps)
    return ['EVALSHA', sha, len(keys)] + keys + args


def items(rnd, n):
    return [(rnd.randrange(NB), [rnd.randrange(BITS) for _ in range(K)]) for _ in range(n)]


def batch(sources, op, per, calls, rounds):
    res = [[], []]
    for r in range(rounds):
        for v, src in enumerate(sources):
            srv = Server()
            try:
                (sha,) = srv.setup([src])
                rnd = random.Random(r)
                work = [[call(sha, op, items(rnd, per), i * per, 'rec:%d' % j) for i in range(calls)]
                        for j in range(20)]
                cpu0, ev0 = srv.cpu(), srv.evalsha()
                for cmds in work:
                    for rep in srv.c.send(cmds):
                        if isinstance(rep, Exception) or rep[0] != b'OK':
                            raise SystemExit('unexpected reply: %r' % (rep,))
                n = 20 * calls * per
                ev = srv.evalsha()
                res[v].append(((srv.cpu() - cpu0) * 1e6 / n, (ev[1] - ev0[1]) / n))
            finally:
                srv.stop()
    med = lambda xs: sorted(xs)[len(xs) // 2]
    for v, name in enumerate(['before', 'after']):
        print('%s %s, calls of %d: server CPU %.3f us/item, EVALSHA %.3f us/item' % (
            name, op, per, med([x[0] for x in res[v]]), med([x[1] for x in res[v]])))
    print('after / before (CPU): %.3f' % (med([x[0] for x in res[1]]) / med([x[0] for x in res[0]])))


def single(sources, op, record):
    srv = Server()
    try:
        shas = srv.setup(sources)
        rnd = random.Random(1)
        per = [[], []]
        n = 0
        for _ in range(30):
            for v, sha in enumerate(shas):
                c0 = srv.evalsha()
                for _ in range(200):
                    n += 1
                    rep = srv.c.send([call(sha, op, items(rnd, 1), 0, 'rec:%d' % n if record else None)])[0]
                    if isinstance(rep, Exception) or rep[0] != b'OK':
                        raise SystemExit('unexpected reply: %r' % (rep,))
                c1 = srv.evalsha()
                per[v].append((c1[1] - c0[1]) / (c1[0] - c0[0]))
    finally:
        srv.stop()
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print('one item, %s, record %s: before %.2f us, after %.2f us per EVALSHA; paired ratio %.3f' % (
        op, record, med(per[0]), med(per[1]), med([b / a for a, b in zip(per[0], per[1])])))


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    rev, mode, op = sys.argv[1:4]
    prelude = open(os.path.join(ROOT, 'src/lua/prelude.lua')).read()
    before = subprocess.check_output(['git', '-C', ROOT, 'show', rev + ':src/lua/data.lua'], text=True)
    after = open(os.path.join(ROOT, 'src/lua/data.lua')).read()
    sources = [prelude + before, prelude + after]
    if mode == 'batch':
        batch(sources, op, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    elif mode == 'single':
        single(sources, op, sys.argv[4] == 'rec')
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main()
