"""Every statement the Neo4j engine can send, planned by a real Neo4j.

The lint (tests/unit/test_neo4j_cypher_lint.py) runs Neo4j's parser
without a server; this asks the server itself to plan each statement
(EXPLAIN: nothing runs) and fails on an error or a deprecation notice, as
the server reports them for its own version (``CALL {}`` without a scope
clause is deprecated since 5.23, for instance).  Runs in the Neo4j pass of
the suite.
"""
import neo4j
import pytest

from tachyon_placement.graph import cypher
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is None,
    reason='needs a Neo4j server: runs in the Neo4j pass '
           '(TACHYON_TEST_NEO4J_URI)')

STATEMENTS = cypher.all_statements()


@pytest.fixture
def session():
    credentials = engines._neo4j_credentials()
    auth = ((credentials['username'], credentials['password'])
            if credentials['username'] else None)
    # Notices come back in the summary; the driver need not warn of them.
    with neo4j.GraphDatabase.driver(
            engines.NEO4J_URI, auth=auth,
            warn_notification_severity="OFF") as driver:
        with driver.session(database=credentials['database']) as session:
            yield session


def test_neo4j_plans_every_statement_without_deprecation(session):
    deprecated = {}
    for name, statement in sorted(STATEMENTS.items()):
        summary = session.run('EXPLAIN ' + statement.text('neo4j')).consume()
        notices = [
            status.status_description
            for status in summary.gql_status_objects
            if status.classification
            == neo4j.NotificationClassification.DEPRECATION]
        if notices:
            deprecated[name] = notices
    assert len(STATEMENTS) > 50
    assert not deprecated, deprecated


def _reads_in_order(plan):
    """The index seeks of a plan in the order they run: an Apply's (or a
    product's) left side before its right one, every operator's inputs
    before it."""
    found = []
    for child in plan.get('children', []):
        found.extend(_reads_in_order(child))
    if 'Seek' in plan['operatorType']:
        found.append(plan.get('args', {}).get('Details', ''))
    return found


def test_a_copy_reads_the_version_before_what_changed(session):
    """Neo4j reads at read-committed isolation: the graph version must be
    read before the changes a copy brings along, or a write committed in
    between names a copy after changes it lacks (world/cache.py
    VERSION_AND_CHANGES; the planner had put the version read last)."""
    statement = cypher.all_statements()['snap_version_and_changes']
    plan = session.run('EXPLAIN ' + statement.text('neo4j'),
                       since=0, most=65).consume().plan
    reads = _reads_in_order(plan)
    order = [next(i for i, read in enumerate(reads) if label in read)
             for label in (':Meta(key)', ':Tombstone(stamp)',
                           ':ResourceProvider(stamp)')]
    assert order[0] < order[1] and order[0] < order[2], reads
