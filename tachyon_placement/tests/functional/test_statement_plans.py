"""FalkorDB plans of the statements that look a provider up by a value
that may be null (a root's parent) or that another node holds (a host
part's provider): the index, never a scan of every provider (a null in a
property map made FalkorDB scan them all, and loading a cloud quadratic;
a part's property was joined with such a scan on every publication)."""
import importlib
import os
import pkgutil
import re
import time

import pytest

from tachyon_placement import graph
from tachyon_placement.graph import cypher
from tachyon_placement.graph import falkordb_engine
from tachyon_placement.graph import providers
from tachyon_placement.graph import topology
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is not None,
    reason='FalkorDB plans: Neo4j seeks its index for a null as for any '
           'value, and plans its own ranges')


@pytest.fixture
def engine():
    name = 'plans_%d_%d' % (os.getpid(), time.monotonic_ns())
    found = falkordb_engine.FalkorDBEngine(
        name, unix_socket_path=engines._embedded_socket())
    found.ensure_schema()
    yield found
    found.drop_graph()
    found.close()


@pytest.mark.parametrize('statement, params', [
    (providers.CREATE, {'uuid': 'a', 'name': 'a', 'name_key': '<a>',
                        'parent_uuid': None}),
    (providers.REPARENT, {'uuid': 'a', 'name': 'a', 'name_key': '<a>',
                          'parent_uuid': None, 'old_parent_uuid': 'b'}),
    (topology.CREATE, {'name': 'h', 'host_provider': None, 'sockets': [],
                       'numa_nodes': [], 'devices': [], 'document': '{}'}),
    (topology.REPLACE, {'name': 'h', 'host_provider': None, 'sockets': [],
                        'numa_nodes': [], 'devices': [], 'document': '{}',
                        'generation': 0}),
], ids=lambda value: getattr(value, 'name', ''))
def test_a_null_lookup_asks_the_index(engine, statement, params):
    plan = str(engine._graph.explain(statement.text('falkordb'), params))
    assert 'Node By Index Scan' in plan
    assert 'Label Scan | (parent:ResourceProvider)' not in plan
    assert 'Label Scan | (rp:ResourceProvider)' not in plan


# Statements that read every provider or consumer by design: the copies of
# the graph the API keeps (whole), the import's checks, the candidate
# probes of engines without such a copy, a schema backfill, the checks of
# tachyon-manage db verify.
SCANS_BY_DESIGN = {
    'import_finish',
    'import_graph_counts', 'import_graph_usages', 'import_marker',
    'integrity_consumers', 'integrity_counts',
    'integrity_orphan_allocations', 'integrity_usage',
    'schema_backfill_name_keys', 'snap_all_aggregates',
    'snap_all_inventories', 'snap_all_providers', 'snap_all_traits'}


# Parameters FalkorDB takes only as a number (LIMIT).
LIMITS = {'most', 'page', 'chunk'}


def test_only_whole_graph_reads_scan_every_provider_or_consumer(engine):
    # Every registered statement, each parameter a string: any other
    # statement whose plan scans a label of the cloud's size was a
    # lookup FalkorDB did not take to an index.
    for module in pkgutil.iter_modules(graph.__path__):
        importlib.import_module('tachyon_placement.graph.' + module.name)
    scanning, planned = set(), 0
    for name, statement in cypher.all_statements().items():
        if name.startswith('schema_') and 'backfill' not in name:
            continue        # index DDL: no plan
        if name.startswith('test_'):
            continue        # the tests' own reads (whole graph checks)
        text = statement.text('falkordb')
        params = {name: 1 if name in LIMITS else 'x'
                  for name in set(re.findall(r'\$(\w+)', text))}
        plan = str(engine._graph.explain(text, params))
        planned += 1
        if re.search(r'Label Scan \| \(\w*:(ResourceProvider|Consumer)\)',
                     plan):
            scanning.add(name)
    assert planned > 90
    assert scanning == SCANS_BY_DESIGN


def test_a_restore_seeks_the_ends_of_relationships_by_id(engine):
    from tachyon_placement.graph import backups
    for statement in backups.RESTORE_RELATIONSHIPS.values():
        plan = str(engine._graph.explain(statement.text('falkordb'),
                                         {'rows': []}))
        assert plan.count('NodeByIdSeek') == 2, plan
        assert 'All Node Scan' not in plan, plan


def test_a_page_of_changes_asks_the_index_for_stamps_only(engine):
    """The catch-up's page (world_reads.CHANGED) asks the stamp index for
    the providers from its start on and filters the tie-break on uuid
    after.  Given to the index too, the OR was answered as a range on
    the uuid index (every provider for the first page's $after '')
    intersected with the stamp range: few records out, 30-80 ms at
    10,000 hosts for an empty page, on a tenth of the scheduling loop's
    candidate reads."""
    from tachyon_placement.graph import world_reads
    engine._graph.query(
        'UNWIND range(1, 60) AS i '
        'CREATE (:ResourceProvider {uuid: toString(1000 + i), stamp: i})')
    text = world_reads.CHANGED.text('falkordb')
    plan = [line.strip().split(' |')[0] for line in
            engine._graph.explain(text, {'start': 1, 'after': '',
                                         'page': 10}).plan]
    assert plan[plan.index('Node By Index Scan') - 1] == 'Filter', plan
    for start, after, read in ((61, '', []),
                               (59, '', ['1059', '1060']),
                               (59, '1059', ['1060'])):
        assert [row[0]['uuid'] for row in engine._graph.ro_query(
            text, {'start': start, 'after': after,
                   'page': 10}).result_set] == read
