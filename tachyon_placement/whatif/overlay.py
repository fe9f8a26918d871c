"""A what-if session's view of the cloud: the store ports the session's
requests use, answering from the real graph changed by the session's
writes, which go to the session alone (its document, graph/whatif.py),
never to the graph.

OverlayStore stands in for the graph store behind a request made within
a session (``req.store``): the allocation writes of domain/allocations.py
run against it unchanged, and the candidate search, capacity and explain
read a private World (the process's copy of the graph evolved with the
session's usage) through world/candidates.py PrivateReader.
"""
import contextlib
import dataclasses

from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import errors
from tachyon_placement.whatif import session
from tachyon_placement.world import candidates as world_candidates
from tachyon_placement.world import records as provider_records


class SessionGone(Exception):
    """The session expired or was discarded (or never was)."""


class SessionFull(domain.InvalidAllocation):
    """A write would make the session hold more consumers than allowed."""


class _Section:
    rolled_back = False


class OverlayStore:
    """The ports of graph.store.Store a request within a session uses:
    ``allocations``, ``worlds``, ``candidates`` (the session's); the
    resource classes and traits are the graph's."""

    def __init__(self, store, session_uuid, most_consumers):
        self.real = store
        self.session_uuid = session_uuid
        self.most_consumers = most_consumers
        self.resource_classes = store.resource_classes
        self.traits = store.traits
        self.allocations = OverlayAllocations(self)
        self.inventories = OverlayInventories(self)
        self.providers = OverlayProviders(self)
        self.worlds = _NoHeldStates()
        self.candidates = OverlayCandidates(self)

    def load(self):
        """(SessionState, its generation) as stored now; SessionGone."""
        found = self.real.whatif_sessions.get(self.session_uuid)
        if found is None:
            raise SessionGone(self.session_uuid)
        document, generation, _expires = found
        return session.SessionState.from_document(document), generation

    def save(self, state, generation):
        """Whether the session's document moved from ``generation`` to
        ``state`` (False: another request of the session wrote first)."""
        return self.real.whatif_sessions.save(
            self.session_uuid, state.as_document(), generation) is not None


class _NoHeldStates:
    """No provider states held without a read: a session's writes always
    take the read, check and write path."""

    def held_provider_states(self, provider_uuids):
        return None


class OverlayAllocations:
    """Allocation reads and writes within the session."""

    def __init__(self, overlay):
        self._overlay = overlay
        # (state, generation, consumers) of the write under way.
        self._attempt = None

    def _real_consumer(self, uuid):
        state, generations, _modified = (
            self._overlay.real.allocations.of_consumer(uuid))
        return (state or domain.ConsumerState(uuid)), generations

    def _real_providers(self, uuids, deleted=()):
        world = self._overlay.real.worlds.current()
        found = {}
        for uuid in uuids:
            record = world.records.get(uuid)
            if record is not None and uuid not in deleted:
                found[uuid] = domain.ProviderState(
                    uuid=uuid, generation=record.provider.generation,
                    inventories=record.inventories)
        return found

    def write_states(self, consumer_uuids, provider_uuids):
        """As the graph store's, seen through the session (read again:
        an attempt starts from the session as stored)."""
        state, generation = self._overlay.load()
        real_consumers = {uuid: self._real_consumer(uuid)[0]
                          for uuid in set(consumer_uuids)}
        consumers = {uuid: state.consumer(real)
                     for uuid, real in real_consumers.items()}
        wanted = set(provider_uuids)
        for view in consumers.values():
            wanted.update(view.allocations)
        real_providers = self._real_providers(wanted, state.deleted)
        state.read(real_consumers, real_providers)
        self._attempt = (state, generation, consumers)
        return consumers, {uuid: state.provider(real)
                           for uuid, real in real_providers.items()}

    def locked_for_write(self, keys):
        # A session's writes are ordered by its document's generation.
        return contextlib.nullcontext(_Section())

    def write(self, plan):
        state, generation, consumers = self._attempt
        state.apply(plan, consumers)
        most = self._overlay.most_consumers
        if len(state.consumers) > most:
            raise SessionFull(
                'The what-if session would hold more than %d consumers '
                '([whatif] max_consumers): commit or discard it.' % most)
        return self._overlay.save(state, generation)

    def write_claim(self, plan, claims):
        return False

    def remove(self, consumer_uuid):
        """As the graph store's remove, within the session."""
        for _attempt in range(8):
            state, generation = self._overlay.load()
            real, _generations = self._real_consumer(consumer_uuid)
            view = state.consumer(real)
            if not view.allocations:
                return False
            if consumer_uuid not in state.consumers:
                state.read({consumer_uuid: real}, {})
            state.remove(view)
            if self._overlay.save(state, generation):
                return True
        return False

    def of_consumer(self, uuid):
        state, _generation = self._overlay.load()
        real, generations = self._real_consumer(uuid)
        view = state.consumer(real)
        if not view.exists or not view.allocations:
            return None, {}, None
        providers = self._real_providers(view.allocations)
        return view, {rp: (state.provider(providers[rp]).generation
                           if rp in providers else generations.get(rp))
                      for rp in view.allocations}, None


class OverlayInventories:
    """Store.inventories within the session: a provider's inventory as the
    session sees it, and the session's whole-inventory writes."""

    def __init__(self, overlay):
        self._overlay = overlay

    def _view(self, state, uuid):
        """(The provider, its inventories) as the graph holds them and as
        the session sees them: ((Provider, {rc: Inventory}) real, seen)."""
        provider, current = self._overlay.real.inventories.of_provider(uuid)
        view = state.provider(domain.ProviderState(
            uuid, provider.generation, current))
        seen = (dataclasses.replace(provider, generation=view.generation),
                view.inventories)
        return (provider, current), seen

    def of_provider(self, uuid):
        state, _generation = self._overlay.load()
        if uuid in state.deleted:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        return self._view(state, uuid)[1]

    def write(self, uuid, generation, change):
        """As the graph store's write (a domain InventoryWrite at the
        provider's generation as the session sees it), to the session:
        the new generation; ConcurrentUpdate."""
        for _attempt in range(8):
            state, saved = self._overlay.load()
            if uuid in state.deleted:
                break
            (provider, current), (seen, inventories) = self._view(state,
                                                                  uuid)
            if seen.generation != generation:
                break
            state.read({}, {uuid: domain.ProviderState(
                uuid, provider.generation, current)})
            new = {rc: inventory for rc, inventory in inventories.items()
                   if rc not in change.deletes}
            for inventory in change.upserts:
                new[inventory.resource_class] = inventory
            state.set_inventories(uuid, new.values())
            if self._overlay.save(state, saved):
                return generation + 1
        raise errors.ConcurrentUpdate(
            'Another thread concurrently updated the resource provider '
            'data. Please retry your update', uuid=uuid)


class OverlayProviders:
    """Store.providers within the session: deletions (what-if only)."""

    def __init__(self, overlay):
        self._overlay = overlay

    def delete(self, uuid):
        """As the graph store's delete, within the session: NotFound,
        InUse (reason children or allocations, as the session sees
        them)."""
        for _attempt in range(8):
            state, saved = self._overlay.load()
            world = self._overlay.real.worlds.current()
            record = world.records.get(uuid)
            if record is None or uuid in state.deleted:
                raise errors.NotFound(uuid=uuid)
            if any(child.parent_uuid == uuid and child.uuid
                   not in state.deleted
                   for child in world.trees.get(record.root_uuid, ())):
                raise errors.InUse(reason='children')
            real = domain.ProviderState(uuid, record.provider.generation,
                                        record.inventories)
            if any(inventory.used for inventory
                   in state.provider(real).inventories.values()):
                raise errors.InUse(reason='allocations')
            state.read({}, {uuid: real})
            state.delete_provider(uuid)
            if self._overlay.save(state, saved):
                return
        raise errors.ConcurrentUpdate(
            'Another thread concurrently updated the resource provider '
            'data. Please retry your update', uuid=uuid)


class OverlayCandidates:
    """Store.candidates within the session: a reader of the private
    World."""

    def __init__(self, overlay):
        self._overlay = overlay

    def reader(self):
        base = self._overlay.real.candidates.reader()
        state, _generation = self._overlay.load()
        world, touched = private_world(base.world, state)
        if not touched:
            return base
        return world_candidates.PrivateReader(world, base, touched)


def private_world(world, state):
    """(The World ``world`` with the session's usage, inventories and
    generation moves, the roots of the trees that changed)."""
    changed = {}
    deleted = [uuid for uuid in state.deleted if uuid in world.records]
    touched = {world.records[uuid].root_uuid for uuid in deleted}
    for uuid in set(state.usage) | set(state.moves):
        record = world.records.get(uuid)
        if record is None or uuid in state.deleted:
            continue
        view = state.provider(domain.ProviderState(
            uuid, record.provider.generation, record.inventories))
        provider = dataclasses.replace(record.provider,
                                       generation=view.generation)
        changed[uuid] = provider_records.ProviderRecord(
            provider, record.seq, record.traits, record.aggregates,
            view.inventories, record.stamp)
    if not changed and not deleted:
        return world, frozenset()
    private = world.evolve(world.version, changed, deleted)
    # What the process's copy carries beside the providers.
    for name in ('weighers', 'weighers_stamp', 'pci_affinity',
                 'pci_affinity_stamp', 'layouts', 'layout_roots',
                 'topology_summaries', 'topology_stamp', 'telemetry'):
        setattr(private, name, getattr(world, name))
    touched.update(record.root_uuid for record in changed.values())
    return private, frozenset(touched)
