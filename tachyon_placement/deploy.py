"""The composition root: a running service assembled from a ConfigOpts
(store, the read model and feed built on it, policy, WSGI app).  The one
place that knows every room: storage (graph/) is handed the capability
rooms' models here, and the copy of the graph (world/) and the change feed
(feed/) are built over the store here."""
import gc
import threading

from oslo_log import log as logging

from tachyon_placement.api import app
from tachyon_placement.feed import service as feed_service
from tachyon_placement.graph import store as graph_store
from tachyon_placement.telemetry import collector as telemetry_collector
from tachyon_placement.telemetry import metrics as telemetry_metrics
from tachyon_placement.topology import affinity
from tachyon_placement.usecases import drift
from tachyon_placement.weighing import model as weighing_model
from tachyon_placement.whatif import service as whatif_service
from tachyon_placement.world import cache as world_cache
from tachyon_placement.world import candidates as world_candidates
from tachyon_placement import policy

LOG = logging.getLogger(__name__)

# The models the definitions stored in the graph are read as.
MODELS = graph_store.Models(
    weigher=weighing_model.Weigher.from_document,
    metric=telemetry_metrics.Metric.from_document,
    pci_rule=affinity.Rule.from_document)


def compose(engine):
    """The store over ``engine`` and what a process builds on it: the copy
    of the graph, the candidate search over it, the change feed."""
    store = graph_store.Store(engine, MODELS)
    store.worlds = world_cache.WorldCache(store)
    store.candidates = world_candidates.Candidates(
        store.worlds, engine.leaves_cycles_in_flight)
    store.feed = feed_service.Feed(store)
    store.sessions = whatif_service.Sessions(store)
    return store


def open_store(conf, sync=True, read_replica=False):
    """compose() over the engine ``[graph] connection`` names; ``sync``:
    the schema, standard classes and traits made sure of first;
    ``read_replica``: see graph.store.open_engine."""
    store = compose(graph_store.open_engine(conf, read_replica))
    if sync:
        try:
            store.sync()
        except Exception:
            store.close()    # e.g. a newer schema: nothing left running
            raise
    return store


def loadapp(conf, store=None):
    """The WSGI application for ``conf``.

    Opens the graph store (starting the embedded engine if no connection
    is configured) and syncs standard classes and traits, unless a store is
    passed in.
    """
    collector = None
    opened = store is None
    if opened:
        store = open_store(conf)
        warm_up(store)
        # One per process; the lease makes one of them collect.
        collector = telemetry_collector.start_collector(
            conf, store, followers=[drift.DriftRecorder(
                store, conf.telemetry.staleness_limit)])
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
    store = open_store(conf, sync=False,
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
