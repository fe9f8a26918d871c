"""The requests whose answers are api-ref's JSON samples
(api-ref/source/samples/), in the order that builds the state each needs.

``tools/make-api-samples`` sends them to a fresh Tachyon and writes the
samples; ``test_api_samples.py`` sends them again and compares, so the
reference never drifts from the service.  A step is (sample name or None,
method, path, request body or None, version header, expected status);
a named step with a body has its request sample too (``NAME-request``).
A path's ``{cursor}`` is the cursor of the last answer of a step named
``...-cursor`` (see resolve()).
"""
import os

SAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
    'api-ref', 'source', 'samples')

P = 'placement 1.39'
T = 'tachyon 1.0'

CN1 = '4e8e5957-649f-477b-9e5b-f1f75b21c03c'
CN2 = '7d2ddd49-6a14-4f21-a4c6-5c6ab2e2f1a3'
NUMA0 = 'c3a4ba2c-6d8e-4b0e-9a4c-7f3b1a9e5d10'
NUMA1 = 'c3a4ba2c-6d8e-4b0e-9a4c-7f3b1a9e5d11'
GPU = 'a1b2c3d4-0000-4000-8000-00000000af00'
SHARED = 'f0e1d2c3-0000-4000-8000-0000000000ff'
AGG = '42896e0d-205d-4fe3-bd1e-100924931787'
INSTANCE = '9b7e1ec8-2a30-4fb1-8f0c-6d2a2b6c1e01'
MIGRATION = '9b7e1ec8-2a30-4fb1-8f0c-6d2a2b6c1e02'
FEED_CONSUMER = '9b7e1ec8-2a30-4fb1-8f0c-6d2a2b6c1e03'
PROJECT = '6e3b2a7f4d1c4b8a9e0f1a2b3c4d5e6f'
USER = '8f9e0d1c2b3a49586a7b8c9d0e1f2a3b'

STEPS = [
    ('root/get-root', 'GET', '/', None, P, 200),
    # Resource classes and traits.
    ('resource_classes/create-resource-class', 'POST', '/resource_classes',
     {'name': 'CUSTOM_FPGA'}, P, 201),
    ('resource_classes/update-resource-class', 'PUT',
     '/resource_classes/CUSTOM_PCI_10DE_1EB8', None, P, 201),
    ('resource_classes/get-resource-class', 'GET',
     '/resource_classes/CUSTOM_FPGA', None, P, 200),
    (None, 'DELETE', '/resource_classes/CUSTOM_FPGA', None, P, 204),
    ('traits/put-trait', 'PUT', '/traits/CUSTOM_GPU_AMPERE', None, P, 201),
    ('traits/get-traits', 'GET', '/traits?name=startswith:CUSTOM_', None, P,
     200),
    # Providers: a compute node with two NUMA nodes and a GPU, a second
    # compute node, a shared disk pool.
    ('resource_providers/create-resource-provider', 'POST',
     '/resource_providers', {'name': 'cn1', 'uuid': CN1}, P, 200),
    (None, 'POST', '/resource_providers',
     {'name': 'cn1_NUMA0', 'uuid': NUMA0, 'parent_provider_uuid': CN1}, P,
     200),
    (None, 'POST', '/resource_providers',
     {'name': 'cn1_NUMA1', 'uuid': NUMA1, 'parent_provider_uuid': CN1}, P,
     200),
    (None, 'POST', '/resource_providers',
     {'name': 'cn1_0000:AF:00.0', 'uuid': GPU, 'parent_provider_uuid': CN1},
     P, 200),
    (None, 'POST', '/resource_providers', {'name': 'cn2', 'uuid': CN2}, P,
     200),
    (None, 'POST', '/resource_providers',
     {'name': 'shared-disk', 'uuid': SHARED}, P, 200),
    ('resource_providers/update-resource-provider', 'PUT',
     '/resource_providers/%s' % SHARED, {'name': 'shared-disk-pool'}, P,
     200),
    ('resource_providers/get-resource-provider', 'GET',
     '/resource_providers/%s' % NUMA0, None, P, 200),
    # Inventories.
    ('inventories/put-inventories', 'PUT',
     '/resource_providers/%s/inventories' % CN1, {
         'resource_provider_generation': 0, 'inventories': {
             'DISK_GB': {'total': 500, 'reserved': 20},
             'MEMORY_MB': {'total': 131072, 'reserved': 2048},
             'VCPU': {'total': 32}}}, P, 200),
    ('inventories/put-inventory', 'PUT',
     '/resource_providers/%s/inventories/VCPU' % CN1, {
         'resource_provider_generation': 1, 'total': 32,
         'allocation_ratio': 4.0, 'max_unit': 16}, P, 200),
    ('inventories/get-inventory', 'GET',
     '/resource_providers/%s/inventories/VCPU' % CN1, None, P, 200),
    ('inventories/post-inventory', 'POST',
     '/resource_providers/%s/inventories' % NUMA0, {
         'resource_class': 'PCPU', 'total': 8}, P, 201),
    (None, 'POST', '/resource_providers/%s/inventories' % NUMA1, {
        'resource_class': 'PCPU', 'total': 8}, P, 201),
    (None, 'PUT', '/resource_providers/%s/inventories' % GPU, {
        'resource_provider_generation': 0, 'inventories': {
            'CUSTOM_PCI_10DE_1EB8': {'total': 1}}}, P, 200),
    (None, 'PUT', '/resource_providers/%s/inventories' % CN2, {
        'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 65536}}}, P, 200),
    (None, 'PUT', '/resource_providers/%s/inventories' % SHARED, {
        'resource_provider_generation': 0, 'inventories': {
            'DISK_GB': {'total': 10000}}}, P, 200),
    ('inventories/get-inventories', 'GET',
     '/resource_providers/%s/inventories' % CN1, None, P, 200),
    # Traits and aggregates of providers.
    ('resource_provider_traits/update-resource_provider-traits', 'PUT',
     '/resource_providers/%s/traits' % GPU, {
         'resource_provider_generation': 1,
         'traits': ['CUSTOM_GPU_AMPERE']}, P, 200),
    (None, 'PUT', '/resource_providers/%s/traits' % NUMA0, {
        'resource_provider_generation': 1, 'traits': ['HW_NUMA_ROOT']}, P,
     200),
    (None, 'PUT', '/resource_providers/%s/traits' % NUMA1, {
        'resource_provider_generation': 1, 'traits': ['HW_NUMA_ROOT']}, P,
     200),
    (None, 'PUT', '/resource_providers/%s/traits' % SHARED, {
        'resource_provider_generation': 1,
        'traits': ['MISC_SHARES_VIA_AGGREGATE']}, P, 200),
    ('resource_provider_traits/get-resource_provider-traits', 'GET',
     '/resource_providers/%s/traits' % GPU, None, P, 200),
    ('resource_provider_aggregates/update-resource_provider-aggregates',
     'PUT', '/resource_providers/%s/aggregates' % CN1, {
         'resource_provider_generation': 2, 'aggregates': [AGG]}, P, 200),
    (None, 'PUT', '/resource_providers/%s/aggregates' % SHARED, {
        'resource_provider_generation': 2, 'aggregates': [AGG]}, P, 200),
    ('resource_provider_aggregates/get-resource_provider-aggregates', 'GET',
     '/resource_providers/%s/aggregates' % CN1, None, P, 200),
    ('resource_providers/get-resource-providers', 'GET',
     '/resource_providers?in_tree=%s' % CN1, None, P, 200),
    # Candidates, claims, usages.
    ('allocation_candidates/get-allocation_candidates', 'GET',
     '/allocation_candidates?resources=VCPU:4,MEMORY_MB:4096,DISK_GB:40'
     '&resources_GPU=CUSTOM_PCI_10DE_1EB8:1&required_GPU=CUSTOM_GPU_AMPERE'
     '&group_policy=none&limit=5', None, P, 200),
    ('allocations/update-allocations', 'PUT', '/allocations/%s' % INSTANCE,
     {'allocations': {
         CN1: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096}},
         SHARED: {'resources': {'DISK_GB': 40}},
         GPU: {'resources': {'CUSTOM_PCI_10DE_1EB8': 1}}},
      'consumer_generation': None, 'consumer_type': 'INSTANCE',
      'project_id': PROJECT, 'user_id': USER}, P, 204),
    ('allocations/get-allocations', 'GET', '/allocations/%s' % INSTANCE,
     None, P, 200),
    ('allocations/manage-allocations', 'POST', '/allocations', {
        INSTANCE: {'allocations': {
            CN2: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096}},
            SHARED: {'resources': {'DISK_GB': 40}}},
            'consumer_generation': 1, 'consumer_type': 'INSTANCE',
            'project_id': PROJECT, 'user_id': USER},
        MIGRATION: {'allocations': {
            CN1: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096}},
            GPU: {'resources': {'CUSTOM_PCI_10DE_1EB8': 1}}},
            'consumer_generation': None, 'consumer_type': 'MIGRATION',
            'project_id': PROJECT, 'user_id': USER}}, P, 204),
    ('resource_provider_allocations/get-resource_provider-allocations',
     'GET', '/resource_providers/%s/allocations' % CN1, None, P, 200),
    ('resource_provider_usages/get-resource_provider-usages', 'GET',
     '/resource_providers/%s/usages' % CN1, None, P, 200),
    ('usages/get-usages', 'GET', '/usages?project_id=%s' % PROJECT, None,
     P, 200),
    (None, 'DELETE', '/allocations/%s' % MIGRATION, None, P, 204),
    # Tachyon's own API.
    ('tachyon/get-tachyon', 'GET', '/tachyon', None, T, 200),
    ('tachyon/put-weigher', 'PUT', '/tachyon/weighers/spread-ram', {
        'weight': 1.0, 'scorer': {'type': 'usage',
                                  'resource_class': 'MEMORY_MB',
                                  'mode': 'spread',
                                  'threshold': {'max': 0.05,
                                                'mode': 'soft'}}}, T, 201),
    ('tachyon/get-weighers', 'GET', '/tachyon/weighers', None, T, 200),
    ('tachyon/put-metric', 'PUT', '/tachyon/metrics/cpu', {
        'query': '100 - avg by (instance) '
                 '(rate(node_cpu_seconds_total{mode="idle"}[5m])) * 100',
        'label': 'instance', 'rewrite': {'pattern': '^(.*):9100$',
                                         'replacement': '\\1'},
        'bounds': {'min': 0, 'max': 100}}, T, 201),
    ('tachyon/get-metrics', 'GET', '/tachyon/metrics', None, T, 200),
    ('tachyon/explain-allocation_candidates', 'GET',
     '/tachyon/explain/allocation_candidates?resources=VCPU:2', None, T,
     200),
    ('tachyon/get-drift', 'GET', '/tachyon/drift', None, T, 200),
    ('tachyon/post-host_weights', 'POST',
     '/tachyon/host_weights?resources=VCPU:2,MEMORY_MB:4096',
     {'hosts': [CN1, CN2]}, T, 200),
    (None, 'DELETE', '/tachyon/weighers/spread-ram', None, T, 204),
    ('tachyon/post-session', 'POST', '/tachyon/sessions', {'ttl': 600}, T,
     201),
    ('tachyon/get-session', 'GET', '/tachyon/sessions/{session}', None, T,
     200),
    ('tachyon/get-sessions', 'GET', '/tachyon/sessions', None, T, 200),
    (None, 'DELETE', '/tachyon/sessions/{session}', None, T, 204),
    ('tachyon/get-capacity', 'GET',
     '/tachyon/capacity?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:100'
     '&per_aggregate=true', None, T, 200),
    ('tachyon/put-topology', 'PUT', '/tachyon/topology/hosts/cn1', {
        'sockets': [{'id': 0}],
        'numa_nodes': [
            {'id': 0, 'socket': 0, 'cpus': [0, 1, 2, 3, 4, 5, 6, 7],
             'memory_mb': 65536},
            {'id': 1, 'socket': 0, 'cpus': [8, 9, 10, 11, 12, 13, 14, 15],
             'memory_mb': 65536}],
        'pci_devices': [
            {'address': '0000:af:00.0', 'vendor_id': '10de',
             'product_id': '1eb8', 'class': '030200', 'numa_node': 1}]},
     T, 201),
    ('tachyon/get-topology-hosts', 'GET', '/tachyon/topology/hosts', None,
     T, 200),
    ('tachyon/put-pci-affinity', 'PUT', '/tachyon/pci_affinity/gpus', {
        'resource_class': 'CUSTOM_PCI_10DE_1EB8', 'policy': 'preferred'},
     T, 201),
    ('tachyon/get-pci-affinity', 'GET', '/tachyon/pci_affinity', None, T,
     200),
    # The change feed: where to start, a claim, what the feed says of it,
    # one kind only, a deletion.  The first read after each write waits
    # for it (a long poll): the feed server follows a replica of the
    # graph, which may be a few milliseconds behind the write's answer.
    ('tachyon/get-changes-cursor', 'GET', '/tachyon/changes', None, T, 200),
    (None, 'PUT', '/allocations/%s' % FEED_CONSUMER, {
        'allocations': {CN2: {'resources': {'VCPU': 2, 'MEMORY_MB': 2048}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}, P, 204),
    ('tachyon/get-changes', 'GET', '/tachyon/changes?since={cursor}&wait=10',
     None, T, 200),
    ('tachyon/get-changes-consumers', 'GET',
     '/tachyon/changes?since={cursor}&kind=consumer', None, T, 200),
    ('tachyon/get-changes-deleted-cursor', 'GET',
     '/tachyon/changes?since={cursor}&kind=consumer', None, T, 200),
    (None, 'DELETE', '/allocations/%s' % FEED_CONSUMER, None, P, 204),
    ('tachyon/get-changes-deleted', 'GET',
     '/tachyon/changes?since={cursor}&kind=consumer,usage&host=cn2&wait=10',
     None, T, 200),
]


def resolve(path, memory):
    """``path`` with ``{cursor}`` and ``{session}`` filled from
    ``memory``."""
    return path.replace('{cursor}', str(memory.get('cursor'))).replace(
        '{session}', str(memory.get('session')))


def remember(name, answer, memory):
    """Keep the cursor of a ``...-cursor`` step's answer, the id of a
    what-if session opened."""
    if name and name.endswith('-cursor') and isinstance(answer, dict):
        memory['cursor'] = answer['cursor']
    if name == 'tachyon/post-session':
        memory['session'] = answer['id']


def stable(document):
    """An answer without what differs per request or run (request ids,
    times)."""
    if isinstance(document, dict):
        return {key: ('<varies>' if key in VARYING
                      or (key == 'id' and isinstance(value, str)
                          and len(value) == 36)
                      else stable(value))
                for key, value in document.items()}
    if isinstance(document, list):
        return [stable(item) for item in document]
    return document


# Keys whose values differ from one run to the next.
VARYING = frozenset(['request_id', 'collected_at', 'age_seconds',
                     'updated_at', 'created_at', 'stamp', 'expires_at'])


def sample_path(name, suffix=''):
    return os.path.join(SAMPLES_DIR, name + suffix + '.json')
