"""GET /tachyon/capacity against its definition, through the API on the
suite's engine: claims made one by one as Nova makes them (the first
candidate of GET /allocation_candidates, PUT /allocations for a new
consumer) until none is left, on generated NUMA clouds with shared disk
pools and partly used hosts, for granular groups (isolated or not) and
requests that only a disk pool or a local disk can hold.  The count's
``total`` is the number of claims, and each host's ``in_total`` the
claims that landed there: on the anchor's tree, or for a candidate of
sharing providers alone on the oldest of their trees."""
import os
import uuid

import hypothesis
from hypothesis import strategies as st
import webob

from tachyon_placement.tests.functional.fixtures import gabbits

SHARING = 'MISC_SHARES_VIA_AGGREGATE'
AGGREGATES = [str(uuid.UUID(int=number)) for number in (1, 2)]


class _Cloud:
    """The providers made, in creation order: {uuid: (root uuid, traits)}."""

    def __init__(self, seed):
        self.seed = seed
        self.providers = {}

    def provider(self, name, parent=None, aggregates=(), traits=(),
                 inventories=None):
        made = self.seed.create_provider(name, *aggregates, parent=parent)
        if traits:
            self.seed.set_traits(made, *traits)
        for rc, total in (inventories or {}).items():
            self.seed.add_inventory(made, rc, total)
        root = self.providers[parent][0] if parent else made
        self.providers[made] = (root, set(traits))
        return made

    def place(self, request):
        """Where a candidate's claims land (the module's docstring)."""
        providers = list(request['allocations'])
        own = [rp for rp in providers
               if SHARING not in self.providers[rp][1]]
        if own:
            # The anchor: sharing providers are of other trees.
            return self.providers[own[0]][0]
        order = list(self.providers)
        return min({self.providers[rp][0] for rp in providers},
                   key=order.index)


@st.composite
def clouds(draw):
    """[(kind, spec)] in creation order: hosts of 1 to 3 NUMA nodes of a
    few VCPUs and MiB, some with a local disk, and up to two disk pools
    in aggregates, made anywhere among the hosts; then claims made
    before the count (partly used hosts)."""
    hosts = draw(st.integers(4, 12))
    pools = draw(st.lists(st.integers(0, hosts), max_size=2))
    steps = []
    for host in range(hosts + 1):
        for before in pools:
            if before == host:
                steps.append(('pool', {
                    'aggregates': draw(st.sets(st.sampled_from(AGGREGATES),
                                               min_size=1)),
                    'disk': draw(st.integers(1, 30))}))
        if host == hosts:
            break
        steps.append(('host', {
            'aggregates': draw(st.sets(st.sampled_from(AGGREGATES),
                                       max_size=1)),
            'disk': draw(st.sampled_from((0, 0, 4, 9))),
            'numa': [(draw(st.integers(1, 5)), draw(st.integers(1, 6)))
                     for _ in range(draw(st.integers(1, 3)))]}))
    return steps, draw(st.lists(st.integers(0, 99), max_size=6))


@st.composite
def requests(draw):
    """The query string of a request: granular groups of VCPU (and
    memory), isolated or not, with or without a disk; or a disk alone."""
    if draw(st.integers(0, 3)) == 0:
        return 'resources=DISK_GB:%d' % draw(st.integers(1, 4))
    parts = []
    if draw(st.booleans()):
        parts.append('resources=DISK_GB:%d' % draw(st.integers(1, 3)))
    for suffix in range(1, draw(st.integers(1, 3)) + 1):
        resources = 'VCPU:%d' % draw(st.integers(1, 2))
        if draw(st.booleans()):
            resources += ',MEMORY_MB:%d' % draw(st.integers(1, 3))
        parts.append('resources%d=%s' % (suffix, resources))
    parts.append('group_policy=%s' % draw(st.sampled_from(
        ('none', 'isolate'))))
    return '&'.join(parts)


def _build(cloud, steps):
    for number, (kind, spec) in enumerate(steps):
        if kind == 'pool':
            cloud.provider('pool%d' % number, aggregates=spec['aggregates'],
                           traits=[SHARING],
                           inventories={'DISK_GB': spec['disk']})
            continue
        host = cloud.provider(
            'host%d' % number, aggregates=spec['aggregates'],
            inventories={'DISK_GB': spec['disk']} if spec['disk'] else {})
        for numa, (vcpu, memory) in enumerate(spec['numa']):
            cloud.provider('host%d-numa%d' % (number, numa), parent=host,
                           inventories={'VCPU': vcpu, 'MEMORY_MB': memory})


def _claim_first(seed, query):
    """Claim the first candidate as Nova would; its request, or None."""
    found = seed.call('GET', '/allocation_candidates?%s&limit=1' % query)
    if not found['allocation_requests']:
        return None
    request = found['allocation_requests'][0]
    seed.call('PUT', '/allocations/%s' % uuid.uuid4(), {
        'allocations': request['allocations'], 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}, expect=(204,))
    return request


def _capacity(seed, query):
    req = webob.Request.blank('/tachyon/capacity?' + query)
    req.headers['x-auth-token'] = 'admin'
    req.headers['openstack-api-version'] = 'tachyon 1.0'
    req.headers['accept'] = 'application/json'
    response = req.get_response(seed.app)
    assert response.status_int == 200, response.text
    return response.json


@hypothesis.settings(
    max_examples=int(os.environ.get('TACHYON_CAPACITY_CLAIMS_EXAMPLES', 12)),
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(clouds(), requests())
# NUMA nodes of 1, 4 and 4 VCPUs, isolated groups of 1 and 2: the search
# reordered the candidates as claims were made (3 claims, counted 2).
@hypothesis.example(([('host', {'aggregates': set(), 'disk': 0,
                                'numa': [(1, 1), (4, 1), (4, 1)]})], []),
                    'resources1=VCPU:1&resources2=VCPU:2'
                    '&group_policy=isolate')
# A disk alone, from a host's local disk or two pools made after it: the
# pools' claims were counted at the host.
@hypothesis.example(([('host', {'aggregates': {AGGREGATES[0]}, 'disk': 9,
                                'numa': [(1, 1)]}),
                      ('pool', {'aggregates': {AGGREGATES[0]}, 'disk': 20}),
                      ('pool', {'aggregates': set(AGGREGATES),
                                'disk': 7})], []),
                    'resources=DISK_GB:2')
def test_the_count_is_what_claims_through_the_api_give(cloud_steps, query):
    steps, used = cloud_steps
    service = gabbits.APIFixture()
    service.start_fixture()
    try:
        seed = service.seed
        cloud = _Cloud(seed)
        _build(cloud, steps)
        # Hosts partly used: a few claims of another shape first.
        for pick in used:
            found = seed.call('GET', '/allocation_candidates?'
                              'resources=VCPU:1&limit=100')
            if found['allocation_requests']:
                request = found['allocation_requests'][
                    pick % len(found['allocation_requests'])]
                seed.call('PUT', '/allocations/%s' % uuid.uuid4(), {
                    'allocations': request['allocations'],
                    'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': None,
                    'consumer_type': 'INSTANCE'}, expect=(204,))
        counted = _capacity(seed, query)
        landed = {}
        for _ in range(1000):
            request = _claim_first(seed, query)
            if request is None:
                break
            place = cloud.place(request)
            landed[place] = landed.get(place, 0) + 1
        else:
            raise AssertionError('more than 1000 claims: draw smaller')
        assert counted['total'] == sum(landed.values()), (query, counted,
                                                          landed)
        assert {host['root_provider_uuid']: host['in_total']
                for host in counted['hosts'] if host['in_total']} == \
            landed, (query, counted)
        assert all(host['fits'] >= host['in_total']
                   for host in counted['hosts'])
    finally:
        service.stop_fixture()
