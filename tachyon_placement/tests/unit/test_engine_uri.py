"""[graph] connection as the README shows it: credentials in a Neo4j URI
go to the driver apart (it refuses them in the URI), decoded, and
[graph] username/password win."""
from oslo_config import cfg
import pytest

from tachyon_placement import conf as conf_module
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
        for key in ('connection', 'username', 'password'):
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
