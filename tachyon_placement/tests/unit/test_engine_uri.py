"""[graph] connection as the README shows it: credentials in a Neo4j URI
go to the driver apart (it refuses them in the URI), decoded, and
[graph] username/password win."""
from oslo_config import cfg
import pytest

from tachyon_placement import conf as conf_module
from tachyon_placement.graph import falkordb_engine
from tachyon_placement.graph import neo4j_engine
from tachyon_placement.graph import store


@pytest.fixture
def made(monkeypatch):
    calls = []

    def engine(uri, username=None, password=None, database=None):
        calls.append((uri, username, password))
    monkeypatch.setattr(neo4j_engine, 'Neo4jEngine', engine)
    return calls


def _conf(connection, **graph):
    conf = cfg.ConfigOpts()
    conf_module.register_opts(conf)
    conf([], default_config_files=[])
    # (overrides live on the module's option groups: cleared at the end)
    conf.set_override('connection', connection, 'graph')
    for key, value in graph.items():
        conf.set_override(key, value, 'graph')
    _CONFS.append(conf)
    return conf


_CONFS = []


@pytest.fixture(autouse=True)
def _cleared():
    yield
    while _CONFS:
        conf = _CONFS.pop()
        for key in ('connection', 'username', 'password',
                    'sentinel_password', 'replica_acks'):
            conf.clear_override(key, 'graph')


def test_credentials_in_the_uri_go_apart(made):
    store.make_engine(_conf('bolt://tachyon:s%40cret@db.example.org:7687'))
    assert made == [('bolt://db.example.org:7687', 'tachyon', 's@cret')]


def test_options_win_over_the_uri(made):
    store.make_engine(_conf('neo4j+s://a:b@db.example.org',
                            username='tachyon', password='other'))
    assert made == [('neo4j+s://db.example.org', 'tachyon', 'other')]


def test_a_uri_without_credentials_is_kept(made):
    store.make_engine(_conf('bolt://db.example.org:7687'))
    assert made == [('bolt://db.example.org:7687', None, None)]


@pytest.fixture
def sentinel_made(monkeypatch):
    calls = []

    def engine(graph, **options):
        calls.append((graph, options))
    monkeypatch.setattr(falkordb_engine, 'FalkorDBEngine', engine)
    return calls


def test_sentinels_their_primary_and_passwords(sentinel_made):
    store.make_engine(_conf(
        'sentinel://:s%40rver@10.0.0.1:26380,10.0.0.2,[fd00::3]:26381/'
        'tachyon', sentinel_password='sentinels', replica_acks=1))
    [(graph, options)] = sentinel_made
    assert graph == 'placement'
    assert options['password'] == 's@rver'
    assert options['replica_acks'] == 1
    assert options['sentinels'] == falkordb_engine.Sentinels(
        [('10.0.0.1', 26380), ('10.0.0.2', 26379), ('fd00::3', 26381)],
        'tachyon', 'sentinels')


def test_graph_password_wins_over_the_sentinel_uri(sentinel_made):
    store.make_engine(_conf('sentinel://:a@s1:1/primary', password='b'))
    assert sentinel_made[0][1]['password'] == 'b'
    assert sentinel_made[0][1]['sentinels'].password is None


@pytest.mark.parametrize('uri, message', [
    ('sentinel://s1:26379', 'needs the name of the primary'),
    ('sentinel://s1:26379/', 'needs the name of the primary'),
    ('sentinel://s1:port/tachyon', 'port is not a number'),
    ('sentinel://s1,,s2/tachyon', 'empty host'),
])
def test_a_sentinel_uri_that_cannot_work_is_refused(uri, message):
    with pytest.raises(ValueError, match=message):
        store.make_engine(_conf(uri))
