"""The Neo4j server tools/neo4j-server.sh runs is set up as Neo4j's own
launcher would set it up.

Runs in the Neo4j pass of the suite when that script started the server
(TACHYON_TEST_NEO4J_CONTROL): the JVM has the options Neo4j ships in its
neo4j.conf, so the page cache reaches direct buffers and native file
access works (neither warns in debug.log), and the page cache has the size
the script was given instead of half the machine's free memory.
"""
import os
import re

import neo4j
import pytest

from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is None or engines.NEO4J_CONTROL is None,
    reason='needs a Neo4j server started by tools/neo4j-server.sh: runs in '
           'the Neo4j pass (TACHYON_TEST_NEO4J_CONTROL)')

_UNITS = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30,
          'kib': 1 << 10, 'mib': 1 << 20, 'gib': 1 << 30}


def _bytes(size):
    """'512m' (the script's form) or '512.00MiB' (Neo4j's) in bytes."""
    number, unit = re.fullmatch(r'([0-9.]+)\s*([a-zA-Z]*)', size).groups()
    return int(float(number) * _UNITS[unit.lower()])


def _query(text):
    with neo4j.GraphDatabase.driver(engines.NEO4J_URI) as driver:
        return driver.execute_query(text).records


def test_page_cache_has_the_size_given():
    settings = os.environ.get('TACHYON_NEO4J_SETTINGS', '').split()
    wanted = next((word.split('=', 1)[1] for word in settings
                   if word.startswith('server.memory.pagecache.size=')),
                  os.environ.get('TACHYON_NEO4J_PAGECACHE', '512m'))
    [record] = _query("SHOW SETTINGS YIELD name, value "
                      "WHERE name = 'server.memory.pagecache.size' "
                      "RETURN value")
    assert record['value'] is not None
    assert _bytes(record['value']) == _bytes(wanted)


def test_jvm_runs_with_neo4j_stock_options():
    [record] = _query("CALL dbms.queryJmx('java.lang:type=Runtime') "
                      "YIELD attributes "
                      "RETURN attributes.InputArguments.value AS arguments")
    arguments = record['arguments']
    for option in ('-Djdk.nio.maxCachedBufferSize=1024',
                   '--add-opens=java.base/java.nio=ALL-UNNAMED',
                   '--add-opens=java.base/java.io=ALL-UNNAMED',
                   '--add-opens=java.base/sun.nio.ch=ALL-UNNAMED'):
        assert option in arguments, arguments


def test_debug_log_has_no_fallback_warnings():
    state = os.environ.get('TACHYON_NEO4J_DIR')
    if not state:
        pytest.skip('TACHYON_NEO4J_DIR unset: the debug log is in the '
                    "script's default state directory, not known here")
    with open(os.path.join(state, 'home', 'logs', 'debug.log')) as log:
        warnings = [line for line in log if ' WARN ' in line
                    and ('fallback mode' in line
                         or 'Incorrect file descriptor' in line)]
    assert not warnings, warnings[:3]
