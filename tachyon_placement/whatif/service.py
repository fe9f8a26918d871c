"""What-if sessions: open, show, discard, commit, and the store a request
made within one reads and writes (whatif/overlay.py).

A session is stored in the graph (graph/whatif.py), not in a process:
any API process serves any session's requests.  ``commit`` writes the
session's consumers as the session left them, and the inventories it set,
in one guarded write (domain/allocations.py plan_write over the graph's
state, as POST /allocations does; with inventories, reshaper.plan_reshape
as POST /reshaper does), then deletes the providers it deleted, in the
same exclusive section (one transaction on Neo4j; on FalkorDB under the
write locks of every provider and consumer concerned, after checking that
the write leaves them no allocation and no child), only if no provider or
consumer the session's writes read moved since: else SessionConflict
naming them, and nothing written.
"""
import dataclasses
import time
import uuid as uuidlib

from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import errors
from tachyon_placement.domain import reshaper
from tachyon_placement.whatif import overlay
from tachyon_placement.whatif import session


class SessionNotFound(errors.NotFound):
    """No live session with that id."""


class TooManySessions(errors.DomainError):
    """[whatif] max_sessions are open."""


class ProviderInUse(errors.InUse):
    """A provider the session deleted would keep a child or an allocation
    for real."""


class SessionConflict(errors.DomainError):
    """What the session read moved since: ``providers``, ``consumers``."""

    def __init__(self, providers, consumers):
        parts = []
        if providers:
            parts.append('resource providers %s' % ', '.join(providers))
        if consumers:
            parts.append('consumers %s' % ', '.join(consumers))
        super().__init__(
            'The what-if session cannot be committed: %s changed since the '
            'session read them. Discard it and try again.'
            % ' and '.join(parts))
        self.providers = providers
        self.consumers = consumers


@dataclasses.dataclass(frozen=True)
class Viewer:
    """Who asks: the project of the request's token, and whether it may
    act on any project's sessions (policy ``tachyon:sessions:any_project``)."""
    project_id: str
    any_project: bool = False

    def sees(self, state):
        return self.any_project or state.owner == self.project_id


def _now_ms():
    return int(time.time() * 1000)


class Sessions:
    """Store.sessions: the what-if sessions over ``store`` (the graph
    store, whose whatif_sessions keep them)."""

    def __init__(self, store):
        self._store = store

    def open(self, ttl, most, owner, most_owned):
        """A new session of ``owner`` (a project id) living ``ttl``
        seconds: its document (see show).  TooManySessions when ``most``
        are open, or ``most_owned`` of that owner."""
        now = _now_ms()
        state = session.SessionState(uuid=str(uuidlib.uuid4()),
                                     created_at=now,
                                     expires_at=now + ttl * 1000,
                                     owner=owner)
        if not self._store.whatif_sessions.create(
                state.uuid, state.as_document(), state.expires_at, most,
                owner, most_owned):
            raise TooManySessions(
                'There are %d what-if sessions open ([whatif] '
                'max_sessions), or %d of your project\'s ([whatif] '
                'max_sessions_per_project): commit or discard one (GET '
                '/tachyon/sessions lists yours).' % (most, most_owned))
        return state

    def _load(self, uuid, viewer):
        """(SessionState, generation) of a live session ``viewer`` sees:
        another project's is not found, as one that does not exist."""
        found = self._store.whatif_sessions.get(uuid)
        state = None
        if found is not None:
            document, generation, _expires = found
            state = session.SessionState.from_document(document)
        if state is None or not viewer.sees(state):
            raise SessionNotFound('No what-if session %s.' % uuid)
        return state, generation

    def show(self, uuid, viewer):
        """The SessionState of a live session; SessionNotFound."""
        return self._load(uuid, viewer)[0]

    def mine(self, viewer, most):
        """The live sessions ``viewer`` sees (its project's, or every
        one's), by id, ``most`` at most."""
        return [session.SessionState.from_document(document)
                for document in self._store.whatif_sessions.documents(
                    None if viewer.any_project else viewer.project_id,
                    most)]

    def discard(self, uuid, viewer):
        self._load(uuid, viewer)
        if not self._store.whatif_sessions.delete(uuid):
            raise SessionNotFound('No what-if session %s.' % uuid)

    def overlay(self, uuid, most_consumers, viewer):
        """The store a request within the session uses (OverlayStore);
        SessionNotFound."""
        self._load(uuid, viewer)
        return overlay.OverlayStore(self._store, uuid, most_consumers)

    def _deletion_order(self, deleted):
        """The providers the session deleted, deepest first."""
        records = self._store.worlds.current().records

        def depth(uuid):
            found = 0
            record = records.get(uuid)
            while record is not None and record.parent_uuid is not None:
                found += 1
                record = records.get(record.parent_uuid)
            return found
        return sorted(deleted, key=lambda uuid: (-depth(uuid), uuid))

    def _check_deletions(self, deleted, providers, deltas):
        """ProviderInUse unless each provider the session deleted is left
        with no allocation by the write (``deltas`` of its plan) and no
        child but those deleted too."""
        if not deleted:
            return
        gone = set(deleted)
        world = self._store.worlds.current()
        added = {}
        for delta in deltas:
            added[(delta['rp'], delta['rc'])] = delta['delta']
        for uuid in deleted:
            state = providers.get(uuid)
            if state is not None and any(
                    inventory.used + added.get((uuid, rc), 0)
                    for rc, inventory in state.inventories.items()):
                raise ProviderInUse(
                    'Unable to delete resource provider %s: Resource '
                    'provider has allocations.' % uuid, uuid=uuid)
            record = world.records.get(uuid)
            if record is not None and any(
                    child.parent_uuid == uuid and child.uuid not in gone
                    for child in world.trees.get(record.root_uuid, ())):
                raise ProviderInUse(
                    'Unable to delete parent resource provider %s: It has '
                    'child resource providers.' % uuid, uuid=uuid)

    def commit(self, uuid, retries, viewer):
        """Write the session's consumers for real, then end the session.
        SessionNotFound; SessionConflict; ProviderInUse;
        domain.InvalidAllocation (the graph no longer holds room for
        them, when nothing the session read moved: e.g. an inventory of a
        provider it did not read) or InventoryInUse;
        errors.ConcurrentUpdate when every attempt lost its race."""
        state, _generation = self._load(uuid, viewer)
        requests = state.requests()
        new_inventories = state.new_inventories()
        consumer_uuids = sorted({request.uuid for request in requests}
                                | set(state.read_consumers))
        provider_uuids = sorted(
            set(state.read_providers) | set(new_inventories)
            | {rp for request in requests for rp in request.allocations})
        deleted = self._deletion_order(state.deleted)

        def attempt():
            consumers, providers = self._store.allocations.write_states(
                consumer_uuids, provider_uuids)
            moved = state.changed_since(consumers, providers)
            if moved[0] or moved[1]:
                raise SessionConflict(*moved)
            wanted = []
            for request in requests:
                real = consumers[request.uuid]
                if not request.allocations and not real.exists:
                    continue    # made and deleted within the session
                if request.project_id is None:
                    # Deleted: the consumer goes with its allocations.
                    request.project_id = real.project_id
                    request.user_id = real.user_id
                wanted.append(request)
            domain.check_providers_exist(
                sorted({rp for request in wanted
                        for rp in request.allocations}
                       | set(new_inventories)), providers)
            plan = None
            if new_inventories:
                # Inventories and allocations in one write, as POST
                # /reshaper makes them.
                plan = reshaper.plan_reshape(new_inventories, wanted,
                                             consumers, providers)
                deltas = plan.allocation_plan.deltas
            elif wanted:
                plan = domain.plan_write(wanted, consumers, providers)
                deltas = plan.deltas
            else:
                deltas = []
            self._check_deletions(deleted, providers, deltas)
            if plan is not None:
                write = (self._store.reshapes.write if new_inventories
                         else self._store.allocations.write)
                if not write(plan):
                    return False
            # Children before their parents; each refused when it keeps a
            # child or an allocation (a guarded write: on Neo4j the whole
            # section is rolled back, on FalkorDB the checks above and the
            # providers' write locks leave no way to it).
            return all(self._store.providers.delete_unused(gone)
                       for gone in deleted)

        if not retries.write(self._store, provider_uuids, consumer_uuids,
                             attempt):
            raise errors.ConcurrentUpdate(
                'Another thread concurrently updated the resource provider '
                'data. Please retry your update')
        self._store.whatif_sessions.delete(uuid)
        return state
