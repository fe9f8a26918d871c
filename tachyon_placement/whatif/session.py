"""A what-if session's state, pure: what its writes changed, over the
real graph it leaves alone.

A session holds the consumers it wrote (their allocations as the session
made them, or deleted), per provider the usage its writes added or took
away, the whole inventory it set (if it set one) and how often its writes
moved its generation, and what it read first:
the real generation of every provider and consumer its writes read.
``commit`` writes the session's consumers for real only if none of those
moved since (tachyon_placement/whatif/service.py).

The state is a JSON document (the store keeps it, graph/whatif.py);
``SessionState`` is its working form.
"""
import dataclasses

from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import models


@dataclasses.dataclass
class SessionState:
    uuid: str
    created_at: int                 # ms since the epoch
    expires_at: int
    # {uuid: domain.ConsumerState, or None when the session deleted it}
    consumers: dict = dataclasses.field(default_factory=dict)
    # {provider uuid: {class: usage added}}
    usage: dict = dataclasses.field(default_factory=dict)
    # {provider uuid: generation moves}
    moves: dict = dataclasses.field(default_factory=dict)
    # {provider uuid: {class: inventory fields but used}}: its whole
    # inventory as the session set it.
    inventories: dict = dataclasses.field(default_factory=dict)
    # Providers the session deleted (a what-if only: see service.commit).
    deleted: list = dataclasses.field(default_factory=list)
    # What the session's writes read first, as it was for real:
    # {provider uuid: generation}, {consumer uuid: generation or None}.
    read_providers: dict = dataclasses.field(default_factory=dict)
    read_consumers: dict = dataclasses.field(default_factory=dict)
    writes: int = 0
    # The project that opened it (its token's): only it may see, use,
    # commit or discard it (or who may act on any project's sessions).
    owner: str = None

    @classmethod
    def from_document(cls, document):
        consumers = {}
        for uuid, held in document['consumers'].items():
            consumers[uuid] = None if held is None else domain.ConsumerState(
                uuid=uuid, generation=held['generation'],
                project_id=held['project_id'], user_id=held['user_id'],
                consumer_type=held['consumer_type'],
                allocations=held['allocations'])
        return cls(uuid=document['id'], created_at=document['created_at'],
                   expires_at=document['expires_at'], consumers=consumers,
                   usage=document['usage'], moves=document['moves'],
                   inventories=document.get('inventories', {}),
                   deleted=document.get('deleted', []),
                   read_providers=document['reads']['providers'],
                   read_consumers=document['reads']['consumers'],
                   writes=document['writes'], owner=document.get('owner'))

    def as_document(self):
        consumers = {}
        for uuid, state in self.consumers.items():
            consumers[uuid] = None if state is None else {
                'generation': state.generation,
                'project_id': state.project_id, 'user_id': state.user_id,
                'consumer_type': state.consumer_type,
                'allocations': state.allocations}
        return {'id': self.uuid, 'created_at': self.created_at,
                'expires_at': self.expires_at, 'consumers': consumers,
                'usage': self.usage, 'moves': self.moves,
                'inventories': self.inventories,
                'deleted': self.deleted,
                'reads': {'providers': self.read_providers,
                          'consumers': self.read_consumers},
                'writes': self.writes, 'owner': self.owner}

    # -- what the session shows --------------------------------------------

    def consumer(self, real):
        """The session's view of a consumer the graph holds as ``real``
        (a ConsumerState, generation None when it does not exist)."""
        if real.uuid in self.consumers:
            held = self.consumers[real.uuid]
            return held if held is not None else domain.ConsumerState(
                real.uuid)
        return real

    def provider(self, real):
        """The session's view of a provider the graph holds as ``real`` (a
        domain ProviderState)."""
        added = self.usage.get(real.uuid)
        moves = self.moves.get(real.uuid, 0)
        if not added and not moves:
            return real
        inventories = dict(real.inventories)
        replaced = self.inventories.get(real.uuid)
        if replaced is not None:
            inventories = {
                rc: models.Inventory(
                    rc, used=(real.inventories[rc].used
                              if rc in real.inventories else 0), **fields)
                for rc, fields in replaced.items()}
        for rc, amount in (added or {}).items():
            inventory = inventories.get(rc)
            if inventory is not None:
                inventories[rc] = dataclasses.replace(
                    inventory, used=inventory.used + amount)
        return domain.ProviderState(uuid=real.uuid,
                                    generation=real.generation + moves,
                                    inventories=inventories)

    # -- what its writes change ----------------------------------------------

    def read(self, consumers, providers):
        """Note the real generations of what a write read first."""
        for uuid, state in consumers.items():
            if uuid not in self.consumers:
                self.read_consumers.setdefault(uuid, state.generation)
        for uuid, state in providers.items():
            self.read_providers.setdefault(uuid, state.generation)

    def guards_hold(self, plan, consumers, providers):
        """Whether the session's views (``consumers``, ``providers``, as
        the write read them) still stand for ``plan``'s guards."""
        return all(
            providers[guard['uuid']].generation == guard['generation']
            for guard in plan.provider_guards) and all(
            consumers[guard['uuid']].generation == guard['generation']
            for guard in plan.consumer_guards)

    def apply(self, plan, consumers):
        """Apply a domain WritePlan (made on the session's views:
        ``consumers`` {uuid: ConsumerState}) as the graph's write would."""
        new = {}
        for row in plan.allocations:
            new.setdefault(row['consumer'], {}).setdefault(
                row['rp'], {})[row['rc']] = row['used']
        emptied = {gone['uuid'] for gone in plan.emptied}
        for written in plan.consumers:
            uuid = written['uuid']
            before = consumers[uuid]
            if uuid in emptied:
                self.consumers[uuid] = None
                continue
            consumer_type = (before.consumer_type if written['keep_type']
                             else written['consumer_type'])
            generation = (before.generation if before.exists else 0) + (
                written['increment'])
            self.consumers[uuid] = domain.ConsumerState(
                uuid=uuid, generation=generation,
                project_id=written['project_id'],
                user_id=written['user_id'], consumer_type=consumer_type,
                allocations=new.get(uuid, {}))
        for delta in plan.deltas:
            self._add(delta['rp'], delta['rc'], delta['delta'])
        for guard in plan.provider_guards:
            self.moves[guard['uuid']] = self.moves.get(guard['uuid'], 0) + 1
        self.writes += 1

    def set_inventories(self, uuid, inventories):
        """Make the provider's whole inventory ``inventories``
        (models.Inventory), as PUT .../inventories would."""
        self.inventories[uuid] = {
            inventory.resource_class: {
                'total': inventory.total, 'reserved': inventory.reserved,
                'min_unit': inventory.min_unit,
                'max_unit': inventory.max_unit,
                'step_size': inventory.step_size,
                'allocation_ratio': float(inventory.allocation_ratio)}
            for inventory in inventories}
        self.moves[uuid] = self.moves.get(uuid, 0) + 1
        self.writes += 1

    def delete_provider(self, uuid):
        """Delete the provider (the caller checked it has no child and no
        allocation within the session)."""
        self.deleted.append(uuid)
        self.writes += 1

    def new_inventories(self):
        """{provider uuid: [models.Inventory]}: the inventories the
        session set, for commit."""
        return {uuid: [models.Inventory(rc, **fields)
                       for rc, fields in replaced.items()]
                for uuid, replaced in sorted(self.inventories.items())}

    def remove(self, state):
        """Delete the consumer ``state`` (the session's view) and its
        allocations, provider generations left alone (as Placement)."""
        for rp, amounts in state.allocations.items():
            for rc, used in amounts.items():
                self._add(rp, rc, -used)
        self.consumers[state.uuid] = None
        self.writes += 1

    def _add(self, rp, rc, amount):
        added = self.usage.setdefault(rp, {})
        added[rc] = added.get(rc, 0) + amount
        if not added[rc]:
            del added[rc]
        if not added:
            del self.usage[rp]

    # -- what commit writes ------------------------------------------------

    def requests(self):
        """ConsumerRequests making every consumer the session wrote what
        the session made it: an emptied list for one it deleted."""
        found = []
        for uuid, state in sorted(self.consumers.items()):
            if state is None:
                found.append(domain.ConsumerRequest(
                    uuid=uuid, project_id=None, user_id=None,
                    allocations={}))
            else:
                found.append(domain.ConsumerRequest(
                    uuid=uuid, project_id=state.project_id,
                    user_id=state.user_id, allocations=state.allocations,
                    consumer_type=state.consumer_type))
        return found

    def changed_since(self, consumers, providers):
        """What moved for real since the session read it: ([provider
        uuids], [consumer uuids]); ``consumers`` and ``providers`` as the
        graph holds them now (a provider missing from it: deleted)."""
        moved_providers = sorted(
            uuid for uuid, generation in self.read_providers.items()
            if uuid not in providers
            or providers[uuid].generation != generation)
        moved_consumers = sorted(
            uuid for uuid, generation in self.read_consumers.items()
            if consumers[uuid].generation != generation)
        return moved_providers, moved_consumers
