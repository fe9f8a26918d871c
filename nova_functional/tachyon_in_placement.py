"""Tachyon's WSGI app in the place of Placement's, under Nova's own
functional tests.

Nova's functional tests reach Placement through one fixture,
``nova.tests.functional.fixtures.PlacementFixture``, a subclass of
Placement's ``placement.tests.functional.fixtures.placement.
PlacementFixture``: it makes a Placement database (``placement.tests.
fixtures.Database``), loads Placement's app (``placement.deploy.loadapp``)
and intercepts requests to its endpoint (wsgi-intercept).  ``install()``
swaps those two for a fresh Tachyon graph per test (the database
fixture, wherever it is used) and Tachyon's app over it (as the
fixture's module sees ``deploy``); nothing of Nova is touched, and
the rest of the fixture (the endpoint, the intercept, Nova's report
client's requests) is Placement's own.

The graph: an embedded FalkorDB server per test process (a graph of its
own per test), or the Neo4j server TACHYON_TEST_NEO4J_URI names (wiped
per test: run one worker), as in Tachyon's own suite.

Installed by swap_hook.py (imported by the ``.pth`` file
nova_functional/run.sh writes into its virtualenv) when TACHYON_NOVA_SWAP=1,
as Nova's tests import Placement's fixture, in every stestr worker.
"""
import tempfile

import fixtures
from oslo_config import cfg

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.telemetry import collector as telemetry_collector
from tachyon_placement.tests.functional.fixtures import engine as test_engine

# Placement's options Tachyon reads under the same keys: what a Nova test
# sets on the fixture's configuration reaches Tachyon.
SHARED_PLACEMENT_OPTIONS = (
    'max_allocation_candidates',
    'allocation_candidates_generation_strategy',
    'randomize_allocation_candidates',
    'allocation_conflict_retry_count',
)


class Current:
    """The graph and app of the running test: what a test of Tachyon's
    own (nova_functional/test_*.py) reaches Tachyon through."""
    store = None
    conf = None
    app = None
    collector = None


def start_collector():
    """Start the telemetry collector over the running test's graph (the
    served app starts one per process; the test app only on demand)."""
    if Current.collector is None:
        Current.collector = telemetry_collector.start_collector(
            Current.conf, Current.store)
    return Current.collector


class TachyonGraph(fixtures.Fixture):
    """In the place of ``placement.tests.fixtures.Database``: a fresh,
    synced graph for one test."""

    def __init__(self, conf_fixture, set_config=False):
        super().__init__()
        self.conf_fixture = conf_fixture
        self.set_config = set_config

    def _setUp(self):
        if self.set_config:
            # Placement's configuration requires a database URL; nothing
            # reads it.
            self.conf_fixture.config(connection='sqlite://',
                                     group='placement_database')
        _real_poll()
        # Nova's tests point tempfile at a directory of their own, removed
        # after each test (fixtures.NestedTempfile): the engine of the
        # process (started by the first test) lives in the real one.
        per_test, tempfile.tempdir = tempfile.tempdir, _TEMPDIR
        try:
            engine = test_engine.new_engine()
        finally:
            tempfile.tempdir = per_test
        self.addCleanup(test_engine.drop_engine, engine)
        store = deploy.compose(engine)
        store.sync()
        Current.store = store
        self.addCleanup(self._forget)

    @staticmethod
    def _forget():
        if Current.collector is not None:
            Current.collector.stop()
        Current.store = Current.conf = Current.app = None
        Current.collector = None


def _real_poll():
    """Give redis-py's hiredis reader the real ``select`` module.

    Nova's functional tests run under eventlet, whose green ``select``
    has no ``poll``; redis-py's hiredis reader polls its socket with it
    only to ask whether a reply is waiting (a timeout of 0), so the real
    one blocks nothing.  Only that module's name is rebound: anything
    else that polls for longer (a server loop) would block every green
    thread."""
    from redis._parsers import hiredis
    if not hasattr(hiredis.select, 'poll'):
        from eventlet import patcher
        hiredis.select = patcher.original('select')


def tachyon_conf_from(placement_conf, overrides=None):
    """Tachyon's configuration for the fixture's: noauth2 (as the
    fixture sets Placement's), the default policy in code, Placement's
    shared [placement] options carried over; then ``overrides`` ({group:
    {option: value}}: what a test of Tachyon's own sets)."""
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('policy_file', '/nonexistent/policy.yaml',
                      group='oslo_policy')
    for name in SHARED_PLACEMENT_OPTIONS:
        try:
            value = placement_conf.placement[name]
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            continue
        conf.set_override(name, value, group='placement')
    for group, values in (overrides or {}).items():
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    return conf


# The temporary directory of the process, before any test changed it.
_TEMPDIR = tempfile.gettempdir()

# {group: {option: value}} a test of Tachyon's own sets before the
# fixture loads the app (e.g. [telemetry] url).
OVERRIDES = {}
# WSGI middlewares (app -> app) a bench puts around the app, e.g. to
# count Tachyon's answers.
WRAPPERS = []


def loadapp(placement_conf):
    """In the place of ``placement.deploy.loadapp``."""
    if Current.store is None:
        raise RuntimeError('the placement fixture loaded its app before '
                           'its database: TachyonGraph was not used')
    Current.conf = tachyon_conf_from(placement_conf, OVERRIDES)
    Current.app = deploy.loadapp(Current.conf, store=Current.store)
    application = Current.app
    for wrap in WRAPPERS:
        application = wrap(application)
    return application


def install(placement):
    """Swap Placement's database and app for Tachyon's in ``placement``,
    the module of Placement's fixture (swap_hook.py calls it when that
    module is imported)."""
    # The module itself (placement.tests.fixtures): some of Nova's tests
    # use its Database directly, to keep one database across several
    # placement fixtures (regressions.test_bug_1679750).
    placement.db_fixture.Database = TachyonGraph
    placement.deploy = _Namespace(loadapp=loadapp)
    if test_engine.NEO4J_URI:
        # The Neo4j driver imports numpy when it is there, and numpy calls
        # os.uname(), which Nova's tests forbid within a test: import it
        # now, as the tests' modules are imported.
        from tachyon_placement.graph import neo4j_engine  # noqa: F401


class _Namespace:
    def __init__(self, **names):
        self.__dict__.update(names)
