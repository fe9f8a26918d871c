"""Assemble a running service from a ConfigOpts: store, policy, WSGI app."""
import gc
import threading

from oslo_log import log as logging

from tachyon_placement.api import app
from tachyon_placement.feed import service as feed_service
from tachyon_placement.graph import store as graph_store
from tachyon_placement.telemetry import collector as telemetry_collector
from tachyon_placement import policy

LOG = logging.getLogger(__name__)


def loadapp(conf, store=None):
    """The WSGI application for ``conf``.

    Opens the graph store (starting the embedded engine if no connection
    is configured) and syncs standard classes and traits, unless a store is
    passed in.
    """
    collector = None
    opened = store is None
    if opened:
        store = graph_store.open_store(conf)
    if store.feed is None:
        store.feed = feed_service.Feed(store)
    if opened:
        warm_up(store)
        # One per process; the lease makes one of them collect.
        collector = telemetry_collector.start_collector(conf, store)
        store.feed.log.capacity = conf.changes.log_size
        feed_service.start_pruning(store, conf.changes.retention_versions,
                                   conf.changes.prune_interval)
    enforcer = policy.make_enforcer(conf)
    application = app.build_stack(conf, store, enforcer)
    application.store = store
    application.enforcer = enforcer
    application.collector = collector
    # What start-up loaded (modules, the provider graph) lives as long as
    # the process: keep full collections from walking it again and again
    # (on a large cloud they paused requests for tens of milliseconds).
    gc.freeze()
    return application


def load_feed_app(conf):
    """The WSGI application the feed server (feed/server.py) runs its
    requests' checks through, over a store of its own: its copy of the
    graph follows the engine for the feed alone (the API's requests never
    refresh it, nor it theirs), and it runs no collector or pruning.
    With FalkorDB it reads a replica of the graph server ([changes]
    read_replica)."""
    store = graph_store.open_store(conf, sync=False,
                                   read_replica=conf.changes.read_replica)
    return loadapp(conf, store=store)


def warm_up(store):
    """Load the in-memory copy of the provider graph, and index it for the
    candidate search, in the background: the service answers meanwhile,
    and a request that needs the copy waits for this load instead of
    starting its own (world/cache.py's WorldCache lock)."""
    def load():
        try:
            reader = store.candidates.reader()
            reader.search_snapshot(reader.sharing_providers(), set())
        except Exception:  # noqa: BLE001 - the first request loads it
            LOG.exception('Loading the provider graph at start-up failed')
    thread = threading.Thread(target=load, name='tachyon-warm-up',
                              daemon=True)
    thread.start()
    return thread
