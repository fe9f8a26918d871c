"""FalkorDB replicas hold the primary's data under the primary's names.

FalkorDB numbers attribute names per graph in the order a server first
meets them, and a replica applies the replication stream's values by
number: two concurrent writes that each bring a new name could number
them apart on the primary and a replica, which then reads every value
under the other name (a promoted replica's allocations read
``{user_id: 'VCPU'}``).  Every db sync makes all the names the
statements know first, in one write and a fixed order
(cypher.attribute_registration).

The oracle: a primary with two replicas, two API processes on it (the
first claims of a fresh graph racing), then each
replica's attribute table must be the primary's, in order, and every
consumer's allocations read on a replica what they read on the primary.
Before the registration, such races numbered the replicas apart in 4 of
40 and 13 of 60 tries.
"""
import os
import subprocess
import sys
import threading
import time
import uuid

import falkordb
import pytest
from oslo_config import cfg

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.graph import cypher
from tachyon_placement.graph import falkordb_engine
from tachyon_placement.graph import schema
from tachyon_placement.tests.functional import sentinel_cluster
from tachyon_placement.tests.functional.fixtures import seed
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is not None,
    reason='FalkorDB only: Neo4j keys properties by name, and its '
           'clustering is Enterprise-only')

# By hand, more (the figure: 100 tries, 0 divergences):
# TACHYON_REPLICA_TRIES=100 pytest .../test_replica_attributes.py
TRIES = int(os.environ.get('TACHYON_REPLICA_TRIES', 5))
# The race of two writes bringing names (see test_a_race_of_new_names).
RACE_TRIES = int(os.environ.get('TACHYON_REPLICA_TRIES', 20))
SLOW_ROWS = 300000
CLAIMS_PER_PROCESS = 3


def _app(engine):
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    store = deploy.compose(engine)
    store.sync()
    return deploy.loadapp(conf, store=store)


def _call(app, method, url, body=None):
    return seed.Seeder(app, '1.39').call(method, url, body)


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    servers = sentinel_cluster.Cluster(
        tmp_path_factory.mktemp('replicas'), replicas=2, sentinels=0,
        min_replicas=0).start()
    yield servers
    servers.stop()


def _engine(server, graph):
    return falkordb_engine.FalkorDBEngine(graph, host='127.0.0.1',
                                          port=server.port)


def _race(primary, graph):
    """Two API processes on a fresh graph (their db syncs one after the
    other), then concurrent first claims of consumers from both: each
    brings the names of consumers and allocations; the consumers."""
    engines_ = [_engine(primary, graph) for _ in range(2)]
    apps = [_app(engine) for engine in engines_]
    errors = []
    host = str(uuid.uuid4())
    _call(apps[0], 'POST', '/resource_providers',
          {'name': 'host-%s' % host[:8], 'uuid': host})
    _call(apps[0], 'PUT', '/resource_providers/%s/inventories' % host, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 64},
                        'MEMORY_MB': {'total': 65536}}})
    consumers = [str(uuid.uuid4())
                 for _ in range(2 * CLAIMS_PER_PROCESS)]

    def claim(app, consumer):
        try:
            _call(app, 'PUT', '/allocations/%s' % consumer, {
                'allocations': {host: {'resources': {
                    'VCPU': 1, 'MEMORY_MB': 512}}},
                'project_id': 'project-%s' % consumer[:8],
                'user_id': 'user-%s' % consumer[:8],
                'consumer_generation': None,
                'consumer_type': 'INSTANCE'})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=claim,
                                args=(apps[index % 2], consumer))
               for index, consumer in enumerate(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for engine in engines_:
        engine.close()
    return consumers


def _view(server, graph, consumers):
    """(attribute names in the server's order, every consumer's
    allocations as read there)."""
    engine = _engine(server, graph)
    try:
        store = deploy.compose(engine)
        names = [row['name'] for row in engine.read(schema.PROPERTY_KEYS)]
        held = {}
        for consumer in consumers:
            state, _generations, _modified = (
                store.allocations.of_consumer(consumer))
            held[consumer] = (state.project_id, state.user_id,
                              state.consumer_type, state.allocations)
        return names, held
    finally:
        engine.close()


def test_replicas_name_values_as_the_primary(cluster):
    primary = cluster.servers[0]
    for attempt in range(TRIES):
        graph = 'replica_attributes_%d_%s' % (attempt, uuid.uuid4().hex[:6])
        consumers = _race(primary, graph)
        cluster.wait_replicas(len(cluster.servers) - 1)
        names, held = _view(primary, graph, consumers)
        for consumer, (project, user, kind, allocations) in held.items():
            assert (project, user, kind) == (
                'project-%s' % consumer[:8], 'user-%s' % consumer[:8],
                'INSTANCE')
            assert [set(resources) for resources in allocations.values()
                    ] == [{'VCPU', 'MEMORY_MB'}]
        for replica in cluster.servers[1:]:
            seen = _view(replica, graph, consumers)
            assert seen == (names, held), (attempt, replica.name)


def _raw(server, graph):
    # A slow write takes seconds on a busy machine: past redis-py 8's
    # default read timeout (5 s) it would fail the test, not the server.
    return falkordb.FalkorDB(host='127.0.0.1', port=server.port,
                             socket_timeout=60).select_graph(graph)


def _slow_write(server, graph, name):
    """A write that sets ``name`` on the last of SLOW_ROWS rows (so it
    makes the name as it runs, late); its seconds."""
    started = time.monotonic()
    _raw(server, graph).query(
        'UNWIND range(1, %d) AS i WITH i WHERE i = %d '
        'CREATE (n:SlowWrite) SET n.%s = i' % (SLOW_ROWS, SLOW_ROWS, name))
    return time.monotonic() - started


def _contents(server, graph):
    view = _raw(server, graph)
    return (view.ro_query('CALL db.propertyKeys()').result_set,
            view.ro_query('MATCH (n) WHERE n:SlowWrite OR n:FastWrite '
                          'RETURN labels(n)[0], properties(n) '
                          'ORDER BY labels(n)[0]').result_set)


def test_a_race_of_new_names_cannot_split_a_synced_graph(cluster):
    """FalkorDB's hazard itself, on Tachyon's names: a slow write that
    sets ``user_id`` as it runs and a fast one, sent meanwhile, whose
    CREATE map holds ``resource_class`` (the primary makes that name when
    it plans the query, before the slow one made its own).  On a graph a
    db sync made, both names exist already and the replicas read what
    the primary does; without the registration, such races split them
    (1 in 10 tries of this very race, seen while writing the test)."""
    primary = cluster.servers[0]
    calibration = 'replica_race_calibration_%s' % uuid.uuid4().hex[:6]
    halfway = _slow_write(primary, calibration, 'user_id') / 2
    for attempt in range(RACE_TRIES):
        graph = 'replica_race_%d_%s' % (attempt, uuid.uuid4().hex[:6])
        engine = _engine(primary, graph)
        try:
            deploy.compose(engine).sync()
        finally:
            engine.close()
        slow = threading.Thread(target=_slow_write,
                                args=(primary, graph, 'user_id'))
        slow.start()
        time.sleep(halfway)
        _raw(primary, graph).query(
            "CREATE (:FastWrite {resource_class: 'VCPU'})")
        slow.join()
        cluster.wait_replicas(len(cluster.servers) - 1)
        expected = _contents(primary, graph)
        for replica in cluster.servers[1:]:
            assert _contents(replica, graph) == expected, (
                attempt, replica.name)


def _status(tmp_path, server, graph):
    """tachyon-status upgrade check on ``graph`` of ``server``: (exit
    code, its table's text unwrapped)."""
    config = tmp_path / ('status-%s.conf' % graph)
    config.write_text('[graph]\nconnection = falkor://127.0.0.1:%d\n'
                      'database = %s\n' % (server.port, graph))
    checked = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.status',
         '--config-file', str(config), 'upgrade', 'check'],
        capture_output=True, text=True, timeout=120)
    return checked.returncode, ' '.join(
        checked.stdout.replace('|', ' ').split())


def test_tachyon_status_fails_when_a_replica_names_values_otherwise(
        cluster, tmp_path):
    """Every replica's attribute table is read and compared with the
    primary's, in order: equal after claims on a synced graph; one name
    more on a replica (made there, as a replica of the divergence would
    have it) is a failure naming the replica and where the tables part."""
    primary = cluster.servers[0]
    graph = 'replica_status_%s' % uuid.uuid4().hex[:6]
    _race(primary, graph)
    cluster.wait_replicas(len(cluster.servers) - 1)
    code, out = _status(tmp_path, primary, graph)
    assert code == 0, out
    assert "Replicas' attribute names" in out, out
    assert '2 replicas name the %d attributes' % len(
        cypher.attribute_names()) in out, out

    replica = cluster.servers[2]
    client = replica.client()
    client.config_set('replica-read-only', 'no')
    try:
        # A name the primary does not have, numbered first on the replica
        # as a racing write would have it: the rest shift by one.
        client.execute_command('GRAPH.QUERY', graph,
                               "CREATE (:Intruder {tachyon_misnamed: 1})")
    finally:
        client.config_set('replica-read-only', 'yes')
    code, out = _status(tmp_path, primary, graph)
    assert code == 2, out
    assert '127.0.0.1:%d' % replica.port in out, out
    assert "attributes there, %d on the primary" % len(
        cypher.attribute_names()) in out, out
