"""whatif/session.py: a session's writes, planned by the domain as real
writes are, change its views as the graph's write would change the
graph, survive their document, and tell what moved since they read it."""
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import models
from tachyon_placement.whatif import session

HOSTS = ('host-a', 'host-b', 'host-c')


def _providers():
    return {uuid: domain.ProviderState(uuid, 3, {
        'VCPU': models.Inventory('VCPU', 16, used=4),
        'MEMORY_MB': models.Inventory('MEMORY_MB', 8192, used=1024)})
        for uuid in HOSTS}


def _fresh():
    return session.SessionState(uuid='s', created_at=1, expires_at=2)


def _write(state, real_consumers, real_providers, requests):
    """One write within the session, as OverlayAllocations makes it."""
    uuids = {request.uuid for request in requests}
    consumers = {uuid: state.consumer(real_consumers.get(
        uuid, domain.ConsumerState(uuid))) for uuid in uuids}
    state.read({uuid: real_consumers.get(uuid, domain.ConsumerState(uuid))
                for uuid in uuids}, real_providers)
    providers = {uuid: state.provider(real)
                 for uuid, real in real_providers.items()}
    plan = domain.plan_write(requests, consumers, providers)
    assert state.guards_hold(plan, consumers, providers)
    state.apply(plan, consumers)


def test_a_migration_flow_within_a_session():
    real_providers = _providers()
    instance = domain.ConsumerState(
        'vm', generation=1, project_id='p', user_id='u',
        consumer_type='INSTANCE',
        allocations={'host-a': {'VCPU': 4, 'MEMORY_MB': 1024}})
    state = _fresh()
    # Move to a migration consumer, claim on the target.
    _write(state, {'vm': instance}, real_providers, [
        domain.ConsumerRequest('vm', 'p', 'u', {'host-b': {
            'VCPU': 4, 'MEMORY_MB': 1024}}, 'INSTANCE'),
        domain.ConsumerRequest('mig', 'p', 'u', {'host-a': {
            'VCPU': 4, 'MEMORY_MB': 1024}}, 'MIGRATION')])
    assert state.consumer(instance).generation == 2
    assert state.consumer(instance).allocations == {
        'host-b': {'VCPU': 4, 'MEMORY_MB': 1024}}
    assert state.usage == {'host-b': {'VCPU': 4, 'MEMORY_MB': 1024}}
    # Placement bumps the generations of the providers written to.
    assert state.provider(real_providers['host-b']).generation == 4
    assert state.provider(real_providers['host-a']).generation == 4
    # Confirmed: the migration's allocations go.
    state.remove(state.consumer(domain.ConsumerState('mig')))
    assert state.usage['host-a'] == {'VCPU': -4, 'MEMORY_MB': -1024}
    assert state.provider(real_providers['host-a']).inventories[
        'VCPU'].used == 0
    assert state.consumers['mig'] is None
    # Its document gives the same state back.
    again = session.SessionState.from_document(state.as_document())
    assert again == state
    # Commit's requests: the instance where the session left it, the
    # migration emptied.
    requests = {request.uuid: request for request in state.requests()}
    assert requests['vm'].allocations == {
        'host-b': {'VCPU': 4, 'MEMORY_MB': 1024}}
    assert requests['mig'].allocations == {}
    # What moved since it read it.
    assert state.changed_since({'vm': instance,
                                'mig': domain.ConsumerState('mig')},
                               real_providers) == ([], [])
    moved = dict(real_providers)
    moved['host-b'] = domain.ProviderState('host-b', 4,
                                           moved['host-b'].inventories)
    del moved['host-a']
    assert state.changed_since(
        {'vm': domain.ConsumerState('vm', generation=2),
         'mig': domain.ConsumerState('mig')}, moved) == (
        ['host-a', 'host-b'], ['vm'])


def test_an_inventory_set_within_a_session():
    real = _providers()['host-a']
    state = _fresh()
    state.read({}, {'host-a': real})
    state.set_inventories('host-a', [models.Inventory('VCPU', 32)])
    seen = state.provider(real)
    assert seen.generation == 4
    assert set(seen.inventories) == {'VCPU'}
    assert seen.inventories['VCPU'].total == 32
    assert seen.inventories['VCPU'].used == 4     # the real usage kept
    assert state.new_inventories() == {
        'host-a': [models.Inventory('VCPU', 32)]}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(('c1', 'c2', 'c3')),
                          st.sampled_from(HOSTS), st.integers(0, 6)),
                min_size=1, max_size=12))
def test_the_views_are_the_writes_applied(writes):
    """After any writes, a provider's usage in the session is its real
    usage plus what the session's consumers hold there."""
    real_providers = _providers()
    state = _fresh()
    for consumer, host, vcpus in writes:
        allocations = {host: {'VCPU': vcpus}} if vcpus else {}
        try:
            _write(state, {}, real_providers, [domain.ConsumerRequest(
                consumer, 'p', 'u', allocations, 'INSTANCE')])
        except domain.InvalidAllocation:
            continue
    for host in HOSTS:
        held = sum(view.allocations.get(host, {}).get('VCPU', 0)
                   for view in state.consumers.values() if view)
        assert state.provider(real_providers[host]).inventories[
            'VCPU'].used == 4 + held
    assert session.SessionState.from_document(state.as_document()) == state
