"""Requests and copies of the graph leave no reference cycles behind.

graph/snapshot.py's settle() freezes every live object out of the garbage
collector's sight (gc.freeze) so that full collections do not walk the
copies of the graph: an object caught in a reference cycle then is never
freed.  A request in flight at that moment (webob keeps the response in
the environ, which refers back) and replaced search nodes (a node and its
summary, a root and its tree's per-class lists) leaked that way: a worker
under a thousand provider changes a second grew by 16 MB/s.
"""
import collections
import gc

import pytest

from tachyon_placement.tests.functional.fixtures import gabbits


@pytest.fixture
def service():
    fixture = gabbits.APIFixture()
    fixture.start_fixture()
    yield fixture
    fixture.stop_fixture()


def _cycles(action):
    """The types of the objects ``action`` left in reference cycles."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        action()
        gc.collect()
        return collections.Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_requests_and_new_copies_of_the_graph_leave_no_cycle(service):
    seed = service.seed
    hosts = []
    for number in range(3):
        host = seed.create_provider('cn%d' % number)
        seed.add_inventory(host, 'VCPU', 8)
        numa = seed.create_provider('cn%d-numa0' % number, parent=host)
        seed.add_inventory(numa, 'MEMORY_MB', 4096)
        hosts.append(host)
    candidates = ('/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
                  '&limit=2')
    seed.call('GET', candidates)        # the search's copy, built once

    def claim_and_search(number):
        def action():
            seed.call('PUT', '/allocations/%s' % (
                '5f0c0d6e-8a1e-4a53-9d62-3a6b2c7d8e%02d' % number), {
                    'allocations': {hosts[number % 3]: {
                        'resources': {'VCPU': 1}}},
                    'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': None,
                    'consumer_type': 'INSTANCE'})
            # A new copy of the graph, and of the changed tree's nodes
            # for the search; the old ones are dropped.
            seed.call('GET', candidates)
            seed.call('GET', '/resource_providers?resources=VCPU:1')
            seed.call('GET', '/resource_providers/%s' % hosts[0])
            seed.call('GET', '/usages?project_id=p', expect=(200,))
        return action

    for number in range(3):
        assert _cycles(claim_and_search(number)) == {}
