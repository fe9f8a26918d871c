"""The bench's runs over FalkorDB servers failed over by Redis Sentinel.

    python -m bench.ha [--replica-acks N] -- <python -m bench arguments>
    python -m bench.ha --single -- <python -m bench arguments>

Starts a primary, two replicas and three sentinels on loopback (the HA
tests' tachyon_placement/tests/functional/sentinel_cluster.py: append-only
files, min-replicas-to-write 1), runs ``python -m bench`` with Tachyon's
``[graph] connection`` set to the sentinels and ``replica_acks`` to N
(default 1: every write waits for a replica to hold it), then stops them.
Compare its scheduling loop with the same bench arguments on the embedded
single server (without ``bench.ha``) and on one server reached over TCP
(``--single``: ``falkor://``, as API processes on several hosts reach
a single server; its write locks are in the server, not in a file):
what replication and WAIT cost.
"""
import argparse
import sys
import tempfile

from bench import __main__ as bench_main
from tachyon_placement.tests.functional import sentinel_cluster


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--replica-acks', type=int, default=1)
    parser.add_argument('--single', action='store_true',
                        help='one server over TCP, no replica')
    parser.add_argument('bench', nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = [arg for arg in args.bench if arg != '--']
    with tempfile.TemporaryDirectory(prefix='tachyon-bench-ha-') as workdir:
        if args.single:
            cluster = sentinel_cluster.Cluster(workdir, replicas=0,
                                               sentinels=0, min_replicas=0)
            conf = ['graph.connection=falkor://127.0.0.1:%d'
                    % cluster.servers[0].port]
        else:
            cluster = sentinel_cluster.Cluster(workdir)
            conf = ['graph.connection=%s' % cluster.uri,
                    'graph.replica_acks=%d' % args.replica_acks]
        cluster.start()
        try:
            return bench_main.main(rest + [
                item for value in conf for item in ('--tachyon-conf', value)])
        finally:
            cluster.stop()


if __name__ == '__main__':
    sys.exit(main())
