"""Every write that changes a provider moves the graph version and stamps
that provider (the contract the per-process graph snapshot relies on)."""
import collections
import gc
import threading
import time
import uuid as uuidlib

import webob

from tachyon_placement.world import cache as world_cache
from tachyon_placement.world import records as provider_records
from tachyon_placement.world import world as world_module

from tachyon_placement.graph.cypher import Statement

STAMPS = Statement('test_stamps', common="""
MATCH (rp:ResourceProvider)
RETURN rp.name AS name, rp.stamp AS stamp, rp.labels_stamp AS labels_stamp
""")
TOMBSTONES = Statement('test_tombstones', common="""
MATCH (t:Tombstone) RETURN t.uuid AS uuid, t.stamp AS stamp
""")


def _stamps(service):
    return {row['name']: row['stamp']
            for row in service.engine.read(STAMPS)}


def _labels_stamps(service):
    return {row['name']: row['labels_stamp']
            for row in service.engine.read(STAMPS)}


def test_writes_move_the_version_and_stamp_what_they_change(service):
    store, seed = service.app.store, service.seed
    version = store.versions.graph()[0]

    def moved(*names):
        nonlocal version
        new_version = store.versions.graph()[0]
        assert new_version > version
        stamps = _stamps(service)
        for name in names:
            assert stamps[name] == new_version, name
        version = new_version

    cn = seed.create_provider('cn')
    moved('cn')
    child = seed.create_provider('child', parent=cn)
    moved('child')
    seed.add_inventory(cn, 'VCPU', 8)
    moved('cn')
    seed.set_traits(child, 'CUSTOM_GOLD')
    moved('child')
    seed.set_aggregates(cn, 'c0c4d3f8-6a3f-4a4e-9a52-5f3b1b3d7f6a')
    moved('cn')
    # Labels: creations, traits and aggregates move labels_stamp too.
    labels = _labels_stamps(service)
    assert labels['cn'] == version and labels['child'] > 0
    seed.call('PUT', '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f', {
        'allocations': {cn: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    moved('cn')
    seed.call('DELETE',
              '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f')
    moved('cn')
    # Allocations move usage only: a copy keeps the labels it has.
    assert _labels_stamps(service) == labels
    # Un-parenting moves the child's whole subtree to a new root.
    grandchild = seed.create_provider('grandchild', parent=child)
    moved('grandchild')
    seed.call('PUT', '/resource_providers/%s' % child,
              {'name': 'child', 'parent_provider_uuid': None})
    moved('child', 'grandchild')
    seed.call('DELETE', '/resource_providers/%s' % grandchild)
    new_version = store.versions.graph()[0]
    assert new_version > version
    assert {row['uuid']: row['stamp']
            for row in service.engine.read(TOMBSTONES)} == {
        grandchild: new_version}


def test_a_failed_guard_moves_nothing(service):
    store, seed = service.app.store, service.seed
    cn = seed.create_provider('cn')
    version = store.versions.graph()[0]
    seed.call('PUT', '/resource_providers/%s/inventories' % cn,
              {'resource_provider_generation': 42,
               'inventories': {'VCPU': {'total': 1}}}, expect=(409,))
    assert store.versions.graph()[0] == version


def _search_snapshot(store):
    reader = store.candidates.reader()
    snapshot, load = reader.search_snapshot(reader.sharing_providers(),
                                            set())
    assert load is None     # every tree is in it
    return snapshot


def test_search_snapshot_rebuilds_exactly_the_changed_trees(service):
    store, seed = service.app.store, service.seed
    first = seed.create_provider('first')
    seed.add_inventory(first, 'VCPU', 8)
    second = seed.create_provider('second')
    seed.add_inventory(second, 'VCPU', 8)
    second_child = seed.create_provider('second-child', parent=second)
    seed.add_inventory(second_child, 'VCPU', 4)
    shared = seed.create_provider('shared')
    seed.add_inventory(shared, 'DISK_GB', 100)
    seed.set_traits(shared, 'MISC_SHARES_VIA_AGGREGATE')
    agg = 'c0c4d3f8-6a3f-4a4e-9a52-5f3b1b3d7f6a'
    seed.set_aggregates(shared, agg)
    seed.set_aggregates(first, agg)

    before = _search_snapshot(store)
    assert _search_snapshot(store) is before    # same version: same one
    seed.call('PUT', '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f', {
        'allocations': {second_child: {'resources': {'VCPU': 3}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    after = _search_snapshot(store)
    assert after is not before
    # The untouched tree keeps its nodes; the written one is new and fresh.
    assert after.trees[first] is before.trees[first]
    assert after.by_uuid[first] is before.by_uuid[first]
    assert after.by_uuid[second_child] is not before.by_uuid[second_child]
    assert after.by_uuid[second_child].room('VCPU')[0] == 1
    assert before.by_uuid[second_child].room('VCPU')[0] == 4
    assert after.by_uuid[second_child].ancestors == (second_child, second)
    # The sharing provider's reach did not change: its tree is kept too.
    assert after.by_uuid[shared] is before.by_uuid[shared]
    assert after.by_uuid[shared].anchors == {shared, first}

    # A new aggregate mate widens the sharing provider's reach: its tree
    # is rebuilt, its reach re-derived.
    seed.set_aggregates(second, agg)
    widened = _search_snapshot(store)
    assert widened.by_uuid[shared] is not after.by_uuid[shared]
    assert widened.by_uuid[shared].anchors == {shared, first, second}
    assert widened.trees[first] is before.trees[first]
    assert set(widened.trees) == {first, second, shared}


def test_search_snapshot_keeps_untouched_trees_after_many_copies(service):
    """A process that moves its copy of the graph more than _STEPS_KEPT
    times between two searches (write requests read the copy too) no
    longer knows which trees changed from the copies' trail, and makes its
    index of trees anew: the search still rebuilds only the trees whose
    records changed (a whole rebuild took 8 s at 10,000 hosts)."""
    store, seed = service.app.store, service.seed
    kept = seed.create_provider('kept')
    seed.add_inventory(kept, 'VCPU', 8)
    written = seed.create_provider('written')
    seed.add_inventory(written, 'VCPU', 64)
    before = _search_snapshot(store)
    world = store.candidates.reader().world
    steps = world_module._STEPS_KEPT + 4
    for _step in range(steps):
        seed.call('PUT', '/allocations/%s' % uuidlib.uuid4(), {
            'allocations': {written: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        store.candidates.reader()    # the copy moves, no search
    assert store.candidates.reader().world.touched_since(world) is None
    after = _search_snapshot(store)
    assert after.by_uuid[kept] is before.by_uuid[kept]
    assert after.trees[kept] is before.trees[kept]
    assert after.by_uuid[written] is not before.by_uuid[written]
    assert after.by_uuid[written].room('VCPU')[0] == 64 - steps


def test_a_copy_keeps_labels_across_allocations_and_reads_new_ones(service):
    """Allocation writes do not re-read traits and aggregates (their
    labels_stamp stays); a label write, and a provider the copy never
    held whose labels are older than the copy, are read."""
    store, seed = service.app.store, service.seed
    cn = seed.create_provider('cn')
    seed.add_inventory(cn, 'VCPU', 8)
    seed.set_traits(cn, 'CUSTOM_GOLD')
    agg = 'c0c4d3f8-6a3f-4a4e-9a52-5f3b1b3d7f6a'
    seed.set_aggregates(cn, agg)
    before = store.worlds.current()
    seed.call('PUT', '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f', {
        'allocations': {cn: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    after = store.worlds.current()
    record = after.records[cn]
    assert record.inventories['VCPU'].used == 2
    assert record.traits is before.records[cn].traits   # kept, not read
    assert record.aggregates == {agg}
    seed.set_traits(cn, 'CUSTOM_SILVER')
    assert store.worlds.current().records[cn].traits == {'CUSTOM_SILVER'}
    labelled = store.worlds.current().version
    seed.call('DELETE',
              '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f')
    # Brought up to date from a copy that never held the provider (its
    # labels older than the copy): they come with the read.
    changed = provider_records.changed_records(
        store.world_reads.changed(labelled, 2000), labelled, {})
    assert changed[cn].inventories['VCPU'].used == 0
    assert changed[cn].traits == {'CUSTOM_SILVER'}
    assert changed[cn].aggregates == {agg}


def test_a_copy_catches_up_in_the_version_read_or_whole(service,
                                                        monkeypatch):
    """A few changes come with the version read; past what it brings
    along (_CHANGES_ALONG), the copy reads them whole: the same copy of
    the graph either way, deletions included."""
    store, seed = service.app.store, service.seed
    gone = seed.create_provider('gone')
    store.worlds.current()
    read, reads = store.engine.read, []

    def counted(statement, **params):
        reads.append(statement.name)
        return read(statement, **params)
    monkeypatch.setattr(store.engine, 'read', counted)
    for count in (3, world_cache._CHANGES_ALONG + 5):
        del reads[:]
        made = [seed.create_provider('rp-%d-%d' % (count, index))
                for index in range(count)]
        seed.add_inventory(made[0], 'VCPU', 4)
        if gone is not None:
            seed.call('DELETE', '/resource_providers/%s' % gone)
            gone = None
        world = store.worlds.current()
        # Read whole only when more changed than the version read brings.
        assert ('snap_changed' in reads) == (
            count > world_cache._CHANGES_ALONG)
        assert world.version == store.versions.graph().version
        for uuid in made:
            assert world.records[uuid].provider.name.startswith(
                'rp-%d-' % count)
        assert world.records[made[0]].inventories['VCPU'].total == 4
        rebuilt = world_module.World(
            world.version, provider_records.from_reads(store.world_reads))
        assert sorted(world.records) == sorted(rebuilt.records)
        assert [record.uuid for record in world.ordered] == [
            record.uuid for record in rebuilt.ordered]


def test_a_copy_far_behind_reads_the_changes_a_page_at_a_time(service,
                                                              monkeypatch):
    """Past what the version read brings along, the changes come in pages
    in (stamp, uuid) order; providers one write stamped alike (one
    allocation on seven of them) straddle pages and none is lost."""
    store, seed = service.app.store, service.seed
    hosts = [seed.create_provider('paged-%d' % index) for index in range(7)]
    for host in hosts:
        seed.add_inventory(host, 'VCPU', 8)
    store.worlds.current()
    monkeypatch.setattr(world_cache, '_CHANGES_ALONG', 0)
    monkeypatch.setattr(world_cache, '_CHANGED_PAGE', 2)
    pages = []
    read = store.engine.read

    def counted(statement, **params):
        rows = read(statement, **params)
        if statement.name == 'snap_changed':
            pages.append([row['provider']['uuid'] for row in rows])
        return rows
    monkeypatch.setattr(store.engine, 'read', counted)
    seed.call('PUT', '/allocations/4e8d2d1c-5b7a-4f61-9d0e-2f3b6c8a9e71', {
        'allocations': {host: {'resources': {'VCPU': 1 + index}}
                        for index, host in enumerate(hosts)},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    later = [seed.create_provider('paged-later-%d' % index)
             for index in range(2)]
    world = store.worlds.current()
    # 9 changed providers, 2 a page: 5 pages, every one read once.
    assert [len(page) for page in pages] == [2, 2, 2, 2, 1]
    assert sorted(sum(pages, [])) == sorted(hosts + later)
    for index, host in enumerate(hosts):
        assert world.records[host].inventories['VCPU'].used == 1 + index
    assert world.version == store.versions.graph().version
    rebuilt = world_module.World(
        world.version, provider_records.from_reads(store.world_reads))
    assert sorted(world.records) == sorted(rebuilt.records)
    assert {uuid: record.inventories for uuid, record in
            world.records.items()} == {
        uuid: record.inventories for uuid, record in
        rebuilt.records.items()}


def test_a_copy_another_thread_moved_uses_the_changes_it_read(
        service, monkeypatch):
    """Threads read the version and the changes since their copy's
    version, and one at a time bring the copy up to date: one that finds
    the copy moved on meanwhile (not to the version it read) applies what
    changed after that from what it read, with no further read (the
    scheduling loop's threads did so a tenth of the time, reading the
    changes again)."""
    store, seed = service.app.store, service.seed
    first = seed.create_provider('first')
    seed.add_inventory(first, 'VCPU', 8)
    store.worlds.current()
    read, reads, moved = store.engine.read, [], []

    def meanwhile(statement, **params):
        if statement.name == 'snap_version_and_changes' and not moved:
            # Another thread brings the copy up to date first (it sees
            # the inventory change), then a write lands: this read sees
            # both changes, the copy holds the first.
            moved.append(True)
            seed.add_inventory(first, 'VCPU', 16)
            assert store.worlds.current().records[first].inventories[
                'VCPU'].total == 16
            moved.append(seed.create_provider('second'))
            assert store.worlds._world.version < (
                store.versions.graph().version)
            del reads[:]        # (the other thread's and the writes')
        reads.append(statement.name)
        return read(statement, **params)
    monkeypatch.setattr(store.engine, 'read', meanwhile)
    world = store.worlds.current()
    second = moved[1]
    assert reads == ['snap_version_and_changes'], reads
    assert world.version == store.versions.graph().version
    assert world.records[first].inventories['VCPU'].total == 16
    assert world.records[second].provider.name == 'second'
    rebuilt = world_module.World(
        world.version, provider_records.from_reads(store.world_reads))
    assert sorted(world.records) == sorted(rebuilt.records)


def test_a_copy_older_than_the_feed_floor_is_made_anew(service,
                                                       monkeypatch):
    """A process idle while more than [changes] retention_versions writes
    went by (a gunicorn worker no request reached): the deletions it
    missed were pruned with their tombstones, so its copy cannot learn
    them from what changed since; it is made anew, not kept with the
    deleted providers in it (both ways of catching up)."""
    store, seed = service.app.store, service.seed

    def topology(method, name):
        request = webob.Request.blank('/tachyon/topology/hosts/' + name,
                                      method=method)
        request.headers['x-auth-token'] = 'admin'
        request.headers['openstack-api-version'] = 'tachyon 1.0'
        if method == 'PUT':
            request.content_type = 'application/json'
            request.json_body = {
                'sockets': [{'id': 0}], 'pci_devices': [],
                'numa_nodes': [{'id': 0, 'socket': 0, 'cpus': [0, 1],
                                'memory_mb': 1024}]}
        response = request.get_response(service.app)
        assert response.status_int in (201, 204), response.text

    for along in (world_cache._CHANGES_ALONG, 0):
        monkeypatch.setattr(world_cache, '_CHANGES_ALONG', along)
        host = 'pruned-away-%d' % along
        gone = seed.create_provider(host)
        topology('PUT', host)
        idle = world_cache.WorldCache(store)
        assert gone in idle.current().records
        assert host in idle.current().topology_summaries
        seed.call('DELETE', '/resource_providers/%s' % gone)
        topology('DELETE', host)
        kept = seed.create_provider('kept-%d' % along)
        assert store.changes.prune(keep=0) == store.versions.graph().version
        world = idle.current()
        assert gone not in world.records and kept in world.records
        assert host not in world.topology_summaries
        rebuilt = world_module.World(
            world.version, provider_records.from_reads(store.world_reads))
        assert sorted(world.records) == sorted(rebuilt.records)


ALL_PROVIDERS = Statement('test_all_provider_stamps', common="""
MATCH (rp:ResourceProvider) RETURN rp.uuid AS uuid, rp.stamp AS stamp
""")


def test_copies_made_while_writes_commit_end_equal_to_the_graph(service):
    """Threads bring the copy up to date while others create, change and
    delete providers: afterwards the copy holds exactly what the graph
    does.  On Neo4j (read-committed) a read can see the version of a write
    being committed before the rest of it; copies named after changes
    they lacked kept deleted providers and old states (every run of a few
    seconds found some) until the copy checks that its newest write was
    whole (World.complete)."""
    store, seed = service.app.store, service.seed
    deadline = time.monotonic() + 5
    failures = []

    def writer(number):
        made = 0
        try:
            while time.monotonic() < deadline:
                uuid = seed.create_provider('w%d-%d' % (number, made))
                made += 1
                seed.add_inventory(uuid, 'VCPU', 8)
                if made % 3 == 0:
                    seed.call('DELETE', '/resource_providers/%s' % uuid)
        except Exception as exc:    # shown by the assertion below
            failures.append(exc)

    def reader():
        while time.monotonic() < deadline:
            store.worlds.current()

    threads = ([threading.Thread(target=writer, args=(n,)) for n in range(3)]
               + [threading.Thread(target=reader) for _ in range(3)])
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    world = store.worlds.current(whole=True)
    assert world.complete == world.version == store.versions.graph().version
    graph = {row['uuid']: row['stamp']
             for row in service.engine.read(ALL_PROVIDERS)}
    assert len(graph) > 30
    assert {uuid: record.stamp for uuid, record in world.records.items()} \
        == graph
    rebuilt = world_module.World(
        world.version, provider_records.from_reads(store.world_reads))
    for uuid, record in rebuilt.records.items():
        assert provider_records.same_record(world.records[uuid], record)


# Requests and copies of the graph leave no reference cycles behind.
#
# world/records.py's settle() freezes every live object out of the garbage
# collector's sight (gc.freeze) so that full collections do not walk the
# copies of the graph: an object caught in a reference cycle then is never
# freed.  A request in flight at that moment (webob keeps the response in
# the environ, which refers back) and replaced search nodes (a node and its
# summary, a root and its tree's per-class lists) leaked that way: a worker
# under a thousand provider changes a second grew by 16 MB/s.
def _cycles(action, modules=('tachyon_placement', 'webob')):
    """The types of the objects that ``action`` left in reference cycles,
    of ``modules``' (None: any module's): by default Tachyon's and
    webob's (the request, the response, search nodes); the neo4j driver
    leaves some of its own (results, transactions), which settle() sweeps
    now and then."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        action()
        gc.collect()
        return collections.Counter(
            type(o).__name__ for o in gc.garbage
            if modules is None
            or type(o).__module__.split('.')[0] in modules)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _claims_and_searches(service):
    """A function of a number that gives an action: a claim (consumer
    ``number``) on one of three hosts, then searches and reads, as a
    scheduler and the dashboards make them."""
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
    return claim_and_search


def test_requests_and_new_copies_of_the_graph_leave_no_cycle(service):
    claim_and_search = _claims_and_searches(service)
    for number in range(3):
        assert _cycles(claim_and_search(number)) == {}


def test_cycles_of_any_library_only_where_the_engine_says_so(service):
    """Engine.leaves_cycles_in_flight is true to the driver: where it is
    false (FalkorDB) settle() skips its sweeps of the frozen objects,
    whose full collection held a worker for up to 1.7 s at 10,000 hosts,
    so no library's objects of a request may end in a reference cycle;
    where it is true (Neo4j: the driver's results, sessions...) they do,
    which is why settle() sweeps there (a driver that stops leaving them
    fails this test: the sweeps can go)."""
    claim_and_search = _claims_and_searches(service)
    claim_and_search(0)()   # first uses (imports, caches) out of the way
    left = collections.Counter()
    for number in range(1, 4):
        left.update(_cycles(claim_and_search(number), modules=None))
    if service.engine.leaves_cycles_in_flight:
        assert left
    else:
        assert left == {}
