"""Capacity arithmetic and write planning of allocations (no database)."""
import contextlib
import types

import pytest

from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import conflicts
from tachyon_placement.domain import errors
from tachyon_placement.domain import models


def provider(uuid, generation=1, **classes):
    return domain.ProviderState(uuid, generation, {
        rc: models.Inventory(rc, **fields) for rc, fields in classes.items()})


def request(uuid, allocations, consumer_type=None):
    return domain.ConsumerRequest(uuid, 'project', 'user', allocations,
                                  consumer_type)


def plan(requests, providers, consumers=None, **kw):
    states = {r.uuid: domain.ConsumerState(r.uuid) for r in requests}
    states.update(consumers or {})
    return domain.plan_write(requests, states,
                             {p.uuid: p for p in providers}, **kw)


def test_capacity_is_total_minus_reserved_times_ratio():
    rp = provider('rp', VCPU=dict(total=8, reserved=2, allocation_ratio=2.0,
                                  max_unit=12, used=10))
    plan([request('c', {'rp': {'VCPU': 2}})], [rp])
    with pytest.raises(domain.InvalidAllocation, match='exceed the capacity'):
        plan([request('c', {'rp': {'VCPU': 3}})], [rp])


def test_min_max_step_violations():
    rp = provider('rp', DISK_GB=dict(total=100, min_unit=10, max_unit=50,
                                     step_size=10))
    for amount in (5, 60, 15):
        with pytest.raises(domain.InvalidAllocation,
                           match='violate inventory constraints'):
            plan([request('c', {'rp': {'DISK_GB': amount}})], [rp])
    plan([request('c', {'rp': {'DISK_GB': 20}})], [rp])


def test_missing_inventory_names_classes_and_provider():
    rp = provider('rp', VCPU=dict(total=8))
    with pytest.raises(domain.InvalidAllocation,
                       match="Inventory for 'DISK_GB' on resource provider "
                             "'rp' invalid."):
        plan([request('c', {'rp': {'DISK_GB': 1}})], [rp])


def test_replacing_own_allocation_does_not_count_it_twice():
    rp = provider('rp', VCPU=dict(total=4, used=4))
    held = domain.ConsumerState('c', 3, 'project', 'user', None,
                                {'rp': {'VCPU': 4}})
    result = plan([request('c', {'rp': {'VCPU': 4}})], [rp], {'c': held})
    assert result.deltas == []
    assert result.consumer_guards == [{'uuid': 'c', 'generation': 3}]


def test_moving_an_allocation_plans_deltas_and_guards_new_provider_only():
    old = provider('old', 5, VCPU=dict(total=4, used=2))
    new = provider('new', 7, VCPU=dict(total=4))
    held = domain.ConsumerState('c', 1, 'p', 'u', None, {'old': {'VCPU': 2}})
    result = plan([request('c', {'new': {'VCPU': 2}})], [old, new],
                  {'c': held})
    assert result.deltas == [{'rp': 'new', 'rc': 'VCPU', 'delta': 2},
                             {'rp': 'old', 'rc': 'VCPU', 'delta': -2}]
    assert result.provider_guards == [{'uuid': 'new', 'generation': 7}]
    assert result.emptied == []


def test_emptying_guards_held_providers():
    rp = provider('rp', 2, VCPU=dict(total=4, used=1))
    held = domain.ConsumerState('c', 1, 'p', 'u', None, {'rp': {'VCPU': 1}})
    result = plan([request('c', {})], [rp], {'c': held})
    assert result.emptied == [{'uuid': 'c', 'providers': ['rp']}]
    assert result.provider_guards == [{'uuid': 'rp', 'generation': 2}]
    assert result.deltas == [{'rp': 'rp', 'rc': 'VCPU', 'delta': -1}]


def test_overcommitted_provider_accepts_a_write_that_reduces_overage():
    # Inventory shrank under existing usage: 6 used of capacity 4.
    rp = provider('rp', VCPU=dict(total=4, used=6))
    held = domain.ConsumerState('c', 1, 'p', 'u', None, {'rp': {'VCPU': 6}})
    plan([request('c', {'rp': {'VCPU': 5}})], [rp], {'c': held})
    with pytest.raises(domain.InvalidAllocation):
        plan([request('c', {'rp': {'VCPU': 7}})], [rp], {'c': held})


def test_several_consumers_in_one_request_share_capacity():
    rp = provider('rp', VCPU=dict(total=4))
    with pytest.raises(domain.InvalidAllocation):
        plan([request('a', {'rp': {'VCPU': 3}}),
              request('b', {'rp': {'VCPU': 2}})], [rp])


class FakeStore:
    """Just enough of the store for apply() (its allocations, resource
    classes and copy of the graph, all this object): the write fails the
    first ``conflicts`` times, as if another writer got in first."""

    def __init__(self, conflicts, held=None, claim_fits=True):
        """``held``: the ProviderStates the store holds without reading
        (None: no copy of the graph, so no claim); ``claim_fits``: what a
        claim's write finds."""
        self.conflicts = conflicts
        self.writes = 0
        self.sections = []
        self.rolled_back = False
        self.held = held
        self.claim_fits = claim_fits
        self.claims = []
        self.allocations = self.resource_classes = self
        self.worlds = self

    def held_provider_states(self, provider_uuids):
        if self.held is None or not set(provider_uuids) <= set(self.held):
            return None
        return {uuid: self.held[uuid] for uuid in provider_uuids}

    def write_claim(self, plan, claims):
        self.claims.append((plan, claims))
        return self.claim_fits

    @contextlib.contextmanager
    def locked_for_write(self, keys):
        self.sections.append([sorted(keys)])
        yield types.SimpleNamespace(rolled_back=self.rolled_back)
        self.sections[-1].append('closed')

    def write_states(self, consumer_uuids, provider_uuids):
        self.sections[-1].append((sorted(provider_uuids),
                                  list(consumer_uuids)))
        return ({uuid: domain.ConsumerState(uuid) for uuid in consumer_uuids},
                {uuid: provider(uuid, VCPU=dict(total=4))
                 for uuid in provider_uuids if uuid == 'rp'})

    def missing(self, names):
        return set(names) - {'VCPU', 'MEMORY_MB'}

    def write(self, plan):
        self.writes += 1
        return self.writes > self.conflicts


def retries(attempts, pauses=None):
    """Retries that record their pauses instead of sleeping."""
    return conflicts.ConflictRetries(
        attempts, sleep=(pauses if pauses is not None else []).append,
        uniform=lambda: 0.5)


def test_apply_retries_generation_conflicts_then_gives_up():
    store = FakeStore(conflicts=2)
    pauses = []
    domain.apply(store, [request('c', {'rp': {'VCPU': 1}})],
                 retries(3, pauses))
    assert store.writes == 3
    assert pauses == [0.005, 0.01]
    # Every attempt reads (the read takes the locks of the requested
    # providers and the consumers), checks and writes in a section of its
    # own.
    assert store.sections == [[['c', 'rp'], (['rp'], ['c']), 'closed']] * 3
    with pytest.raises(errors.ConcurrentUpdate):
        domain.apply(FakeStore(conflicts=5),
                     [request('c', {'rp': {'VCPU': 1}})], retries(3))


def test_a_section_rolled_back_at_commit_is_tried_again():
    """A write that went through inside a section the engine then rolled
    back (Neo4j found a deadlock at commit) did not happen."""
    store = FakeStore(conflicts=0)
    store.rolled_back = True
    with pytest.raises(errors.ConcurrentUpdate):
        domain.apply(store, [request('c', {'rp': {'VCPU': 1}})], retries(3))
    assert store.writes == 3


def test_conflict_pauses_grow_with_jitter_up_to_a_cap():
    pauses = []
    draws = iter([0.0, 1.0, 0.25, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    attempts = list(conflicts.ConflictRetries(
        10, sleep=pauses.append, uniform=lambda: next(draws)))
    assert attempts == list(range(10))
    assert pauses == pytest.approx(
        [0.0, 0.02, 0.01, 0.08, 0.16, 0.32, 0.32, 0.32, 0.32])
    # No pause before the first attempt, and at least one attempt.
    assert list(conflicts.ConflictRetries(0, sleep=pauses.append)) == [0]
    assert len(pauses) == 9


def test_apply_reports_missing_provider_class_and_stale_consumer():
    with pytest.raises(domain.ProviderMissing):
        domain.apply(FakeStore(0), [request('c', {'nope': {'VCPU': 1}})],
                     retries(3))
    with pytest.raises(domain.UnknownResourceClass):
        domain.apply(FakeStore(0), [request('c', {'rp': {'CUSTOM_X': 1}})],
                     retries(3))
    with pytest.raises(domain.ConsumerGenerationConflict,
                       match='expected null but got 4'):
        domain.apply(FakeStore(0), [request('c', {'rp': {'VCPU': 1}})],
                     retries(3), client_generations={'c': 4})


def test_remove_allocations_is_one_write_without_a_read():
    """DELETE /allocations/{consumer}: no section, no read, one write;
    a consumer that holds nothing is NoAllocations."""
    removed = []

    class Removing(FakeStore):
        def remove(self, consumer_uuid):
            removed.append(consumer_uuid)
            return consumer_uuid == 'c'
    store = Removing(conflicts=0)
    domain.remove_allocations(store, 'c')
    with pytest.raises(domain.NoAllocations,
                       match="No allocations for consumer 'other'"):
        domain.remove_allocations(store, 'other')
    assert removed == ['c', 'other']
    assert store.sections == [] and store.writes == 0


def test_a_new_consumer_is_claimed_on_the_states_held_in_one_write():
    """No section, no read: the write checks the inventory fields the plan
    was checked against and the room left at the usage it finds."""
    held = {'rp': provider('rp', 7, VCPU=dict(total=8, reserved=1,
                                              allocation_ratio=2.0,
                                              used=3),
                           MEMORY_MB=dict(total=4096))}
    store = FakeStore(0, held=held)
    domain.apply(store, [request('c', {'rp': {'VCPU': 2, 'MEMORY_MB': 512}})],
                 retries(3), client_generations={'c': None})
    assert store.sections == [] and store.writes == 0
    [(written, claims)] = store.claims
    assert written.consumer_guards == [{'uuid': 'c', 'generation': None}]
    assert written.provider_guards == [{'uuid': 'rp', 'generation': 7}]
    assert claims == [
        {'rp': 'rp', 'rc': 'MEMORY_MB', 'delta': 512, 'total': 4096,
         'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
         'step_size': 1, 'allocation_ratio': 1.0},
        {'rp': 'rp', 'rc': 'VCPU', 'delta': 2, 'total': 8, 'reserved': 1,
         'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
         'allocation_ratio': 2.0}]


def test_what_is_no_claim_or_fails_as_one_goes_the_locked_way():
    def applied(store, allocations, generations=None):
        domain.apply(store, [request('c', allocations)], retries(3),
                     client_generations=generations)
        return len(store.claims), store.writes

    held = {'rp': provider('rp', VCPU=dict(total=4, used=3))}
    # The claim's write found the graph otherwise (a consumer, a provider
    # gone, an inventory changed or full): read, check, write.
    assert applied(FakeStore(0, held, claim_fits=False),
                   {'rp': {'VCPU': 1}}) == (1, 1)
    # The states held say it does not fit: the fresh read decides.
    assert applied(FakeStore(0, held), {'rp': {'VCPU': 2}}) == (0, 1)
    # A consumer the client says exists; no copy of the graph; a provider
    # the copy does not hold; emptying a consumer (DELETE).
    store = FakeStore(0, held)
    with pytest.raises(domain.ConsumerGenerationConflict):
        applied(store, {'rp': {'VCPU': 1}}, {'c': 3})
    assert store.claims == []
    assert applied(FakeStore(0), {'rp': {'VCPU': 1}}) == (0, 1)
    assert applied(FakeStore(0, {}), {'rp': {'VCPU': 1}}) == (0, 1)
    assert applied(FakeStore(0, held), {}) == (0, 1)


def test_each_retry_is_told_before_it_waits():
    told = []
    attempts = conflicts.ConflictRetries(
        3, sleep=lambda seconds: told.append('slept'), uniform=lambda: 0.5,
        on_retry=lambda: told.append('retry'))
    domain.apply(FakeStore(conflicts=2), [request('c', {'rp': {'VCPU': 1}})],
                 attempts)
    assert told == ['retry', 'slept', 'retry', 'slept']
