"""Each handler names the stores it uses (wsgi.handler's ``uses``), and
reaches only those through ``req.store``."""
import types

import pytest

from tachyon_placement.api import routes
from tachyon_placement.api import wsgi
from tachyon_placement import deploy


def _store():
    """A Store over an engine that is never asked anything."""
    return deploy.compose(types.SimpleNamespace(
        leaves_cycles_in_flight=False))


def _handlers():
    for table in (routes.ROUTES, routes.TACHYON_ROUTES):
        for url, methods in table.items():
            for method, handler in methods.items():
                for impl in getattr(handler, 'implementations', (handler,)):
                    yield '%s %s' % (method, url), impl


def test_every_handler_names_stores_the_store_has():
    store = _store()
    named = set()
    for route, handler in _handlers():
        assert hasattr(handler, 'uses'), '%s: not a wsgi.handler' % route
        for name in handler.uses:
            assert hasattr(store, name), '%s uses no store %r' % (
                route, name)
        named.update(handler.uses)
    # The resource stores a handler can name, each named by one at least
    # (the rest serve the change feed, the import and the collector).
    assert {'providers', 'traits', 'resource_classes', 'inventories',
            'aggregates', 'allocations', 'usages', 'reshapes',
            'candidates', 'weighers', 'metrics', 'scorers',
            'pci_affinity', 'topology'} <= named


def test_a_handler_reaches_only_the_stores_it_named():
    store = _store()
    view = wsgi.StoreView(store, ('traits', 'providers'))
    assert view.traits is store.traits
    assert view.providers is store.providers
    with pytest.raises(AttributeError):
        view.allocations
    with pytest.raises(AttributeError):
        wsgi.NO_STORES.providers


def test_the_root_document_uses_no_store():
    assert routes.ROUTES['/']['GET'].uses == ()
