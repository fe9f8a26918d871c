"""Assemble a running service from a ConfigOpts: store, policy, WSGI app."""
import gc

from oslo_log import log as logging

from tachyon_placement.api import app
from tachyon_placement.graph import store as graph_store
from tachyon_placement import policy

LOG = logging.getLogger(__name__)


def loadapp(conf, store=None):
    """The WSGI application for ``conf``.

    Opens the graph store (starting the embedded engine if no connection
    is configured) and syncs standard classes and traits, unless a store is
    passed in.
    """
    if store is None:
        store = graph_store.open_store(conf)
        # Load the in-memory copy of the provider graph, and index it for
        # the candidate search, now rather than on the first request that
        # needs it.
        reader = store.candidate_reader()
        reader.search_snapshot(reader.sharing_providers(), set())
    enforcer = policy.make_enforcer(conf)
    application = app.build_stack(conf, store, enforcer)
    application.store = store
    application.enforcer = enforcer
    # What start-up loaded (modules, the provider graph) lives as long as
    # the process: keep full collections from walking it again and again
    # (on a large cloud they paused requests for tens of milliseconds).
    gc.freeze()
    return application
