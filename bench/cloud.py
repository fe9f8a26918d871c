"""The seeded cloud: topology, existing allocations, and loading it over HTTP.

``build_cloud(hosts, seed)`` is a pure function: the same arguments give the
same providers, UUIDs, inventories, traits, aggregates and allocations, so
both services are loaded with exactly the same cloud.

Per compute host (a root provider named ``compute-NNNNN``):

* root: ``VCPU`` (allocation ratio 4.0), ``MEMORY_MB`` (512 reserved) and,
  unless the host uses shared storage, ``DISK_GB``; CPU traits
  (``HW_CPU_X86_*``) and a few ``COMPUTE_*`` traits;
* two NUMA children (``HW_NUMA_ROOT``): ``PCPU``, ``VCPU`` (ratio 4.0),
  ``MEMORY_MB``;
* on SR-IOV hosts (70 %), one PF grandchild under each NUMA node:
  ``SRIOV_NET_VF`` and ``NET_BW_EGR_KILOBIT_PER_SEC``, traits
  ``HW_NIC_SRIOV`` and one ``CUSTOM_PHYSNET0..3``;
* on GPU hosts (15 %), a ``VGPU`` child of the root.

About 20 % of the hosts use shared storage: they have no local ``DISK_GB``
and are in one of ``max(2, hosts // 200)`` aggregates, each with one sharing
provider (``DISK_GB``, ``MISC_SHARES_VIA_AGGREGATE``).  Four local-disk
hosts are also in the "race" aggregate the fill race targets.

Existing allocations: each host is filled to a random fraction (0-80 %) of
the capacity of every inventory in its tree (and its share of the sharing
provider's disk), by a few consumers (as many as ``max_unit`` requires).
With ``vms_per_host`` N, by at least N consumers, as a host running N
instances is: each takes a share of the root's (and sharing provider's)
resources, the children's (NUMA, PF, GPU) are split among as few of them
as ``max_unit`` allows, in turn, so a consumer holds a handful of
allocation rows as Nova's instances do.
"""
import collections
import concurrent.futures
import dataclasses
import math
import random
import threading
import time
import uuid

PHYSNETS = ['CUSTOM_PHYSNET%d' % i for i in range(4)]
CUSTOM_TRAITS = list(PHYSNETS)
CPU_TRAITS_ALWAYS = ['HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX',
                     'HW_CPU_X86_AESNI', 'COMPUTE_NET_VIF_MODEL_VIRTIO',
                     'COMPUTE_IMAGE_TYPE_QCOW2']
CPU_TRAITS_SOME = [('HW_CPU_X86_AVX2', 0.7), ('HW_CPU_X86_AVX512F', 0.3),
                   ('HW_CPU_HYPERTHREADING', 0.5),
                   ('COMPUTE_VOLUME_MULTI_ATTACH', 0.8)]
# (physical cpus, memory MiB), weight
HOST_TYPES = [((32, 131072), 2), ((64, 262144), 4), ((96, 393216), 3),
              ((128, 524288), 1)]
SHARED_STORAGE_FRACTION = 0.2
SRIOV_FRACTION = 0.7
VGPU_FRACTION = 0.15
RACE_HOSTS = 4
MAX_FILL = 0.8
PROJECTS = 20


@dataclasses.dataclass
class Inventory:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 0           # 0: total
    step_size: int = 1
    allocation_ratio: float = 1.0

    def __post_init__(self):
        if not self.max_unit:
            self.max_unit = self.total

    @property
    def capacity(self):
        return int((self.total - self.reserved) * self.allocation_ratio)

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Provider:
    uuid: str
    name: str
    kind: str                   # compute, numa, pf, vgpu, sharing
    parent_uuid: str = None
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: list = dataclasses.field(default_factory=list)
    aggregates: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Host:
    index: int
    providers: list             # root first, parents before children
    shared_aggregate: str = None
    sharing_provider: str = None
    race: bool = False
    fill: float = 0.0
    # consumer uuid -> POST /allocations entry (1.38+ format)
    allocations: dict = dataclasses.field(default_factory=dict)

    @property
    def root(self):
        return self.providers[0]


@dataclasses.dataclass
class Cloud:
    seed: int
    hosts: list
    sharing: list               # sharing providers
    shared_aggregates: list     # aggregate uuids, one per sharing provider
    race_aggregate: str
    projects: list
    users: list

    def providers(self):
        for p in self.sharing:
            yield p
        for h in self.hosts:
            yield from h.providers

    @property
    def provider_count(self):
        return len(self.sharing) + sum(len(h.providers) for h in self.hosts)

    @property
    def consumer_count(self):
        return sum(len(h.allocations) for h in self.hosts)

    def by_uuid(self):
        return {p.uuid: p for p in self.providers()}

    def expected_usage(self):
        """rp uuid -> {resource class: used} after the seeded allocations."""
        usage = collections.defaultdict(collections.Counter)
        for h in self.hosts:
            for entry in h.allocations.values():
                for rp, alloc in entry['allocations'].items():
                    usage[rp].update(alloc['resources'])
        return usage

    def race_hosts(self):
        return [h for h in self.hosts if h.race]

    def summary(self):
        kinds = collections.Counter(p.kind for p in self.providers())
        return {
            'hosts': len(self.hosts),
            'providers': self.provider_count,
            'providers_by_kind': dict(kinds),
            'consumers': self.consumer_count,
            'allocation_rows': sum(
                len(resources['resources'])
                for host in self.hosts
                for consumer in host.allocations.values()
                for resources in consumer['allocations'].values()),
            'shared_aggregates': len(self.shared_aggregates),
            'shared_storage_hosts': sum(1 for h in self.hosts
                                        if h.shared_aggregate),
            'race_hosts': [h.root.name for h in self.race_hosts()],
            'seed': self.seed,
        }


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _weighted(rng, choices):
    values = [c for c, _ in choices]
    weights = [w for _, w in choices]
    return rng.choices(values, weights)[0]


def build_cloud(hosts, seed=42, vms_per_host=None):
    """The deterministic cloud of ``hosts`` compute hosts (see the module
    documentation for ``vms_per_host``)."""
    rng = random.Random('tachyon-bench-topology-%d' % seed)
    n_shared_aggs = max(2, hosts // 200)
    shared_aggs = [_uuid(rng) for _ in range(n_shared_aggs)]
    race_agg = _uuid(rng)

    host_list = []
    next_shared = 0
    race_left = RACE_HOSTS
    for i in range(hosts):
        name = 'compute-%05d' % i
        cpus, mem = _weighted(rng, HOST_TYPES)
        shared = rng.random() < SHARED_STORAGE_FRACTION
        root = Provider(_uuid(rng), name, 'compute')
        root.inventories['VCPU'] = Inventory(cpus, allocation_ratio=4.0)
        root.inventories['MEMORY_MB'] = Inventory(mem // 2, reserved=512)
        if not shared:
            root.inventories['DISK_GB'] = Inventory(
                rng.choice([1000, 2000, 4000]))
        root.traits = list(CPU_TRAITS_ALWAYS) + [
            t for t, p in CPU_TRAITS_SOME if rng.random() < p]
        host = Host(i, [root])
        if shared:
            host.shared_aggregate = shared_aggs[next_shared % n_shared_aggs]
            next_shared += 1
            root.aggregates.append(host.shared_aggregate)
        elif race_left:
            race_left -= 1
            host.race = True
            root.aggregates.append(race_agg)
        sriov = rng.random() < SRIOV_FRACTION
        for n in range(2):
            numa = Provider(_uuid(rng), '%s_NUMA%d' % (name, n), 'numa',
                            parent_uuid=root.uuid)
            numa.inventories['PCPU'] = Inventory(cpus // 4)
            numa.inventories['VCPU'] = Inventory(cpus // 4,
                                                 allocation_ratio=4.0)
            numa.inventories['MEMORY_MB'] = Inventory(mem // 4)
            numa.traits = ['HW_NUMA_ROOT']
            host.providers.append(numa)
            if sriov:
                pf = Provider(_uuid(rng), '%s:sriov-agent:ens%df0'
                              % (name, n + 1), 'pf', parent_uuid=numa.uuid)
                pf.inventories['SRIOV_NET_VF'] = Inventory(
                    rng.choice([8, 16, 32, 64]))
                pf.inventories['NET_BW_EGR_KILOBIT_PER_SEC'] = Inventory(
                    rng.choice([10000000, 25000000]))
                pf.traits = ['HW_NIC_SRIOV', rng.choice(PHYSNETS)]
                host.providers.append(pf)
        if rng.random() < VGPU_FRACTION:
            gpu = Provider(_uuid(rng), '%s_pci_0000_81_00_0' % name, 'vgpu',
                           parent_uuid=root.uuid)
            gpu.inventories['VGPU'] = Inventory(rng.choice([8, 16]))
            host.providers.append(gpu)
        host_list.append(host)

    sharing = []
    members_of = collections.defaultdict(list)
    for h in host_list:
        if h.shared_aggregate:
            members_of[h.shared_aggregate].append(h)
    for k, agg in enumerate(shared_aggs):
        members = members_of[agg]
        ss = Provider(_uuid(rng), 'shared-storage-%03d' % k, 'sharing')
        ss.inventories['DISK_GB'] = Inventory(2000 * len(members) + 10000)
        ss.traits = ['MISC_SHARES_VIA_AGGREGATE']
        ss.aggregates = [agg]
        sharing.append(ss)
        for h in members:
            h.sharing_provider = ss.uuid

    cloud = Cloud(seed, host_list, sharing, shared_aggs, race_agg,
                  projects=[_uuid(rng).replace('-', '')
                            for _ in range(PROJECTS)],
                  users=[_uuid(rng).replace('-', '')
                         for _ in range(PROJECTS)])
    _seed_allocations(cloud, random.Random('tachyon-bench-allocs-%d' % seed),
                      vms_per_host)
    return cloud


def _seed_allocations(cloud, rng, vms_per_host=None):
    """Fill each host to a random fraction of capacity (see module doc)."""
    sharing = {p.uuid: p for p in cloud.sharing}
    for host in cloud.hosts:
        host.fill = rng.uniform(0.0, MAX_FILL)
        amounts = []        # (rp uuid, rc, amount, max_unit)
        for p in host.providers:
            for rc, inv in p.inventories.items():
                amount = int(inv.capacity * host.fill)
                if amount > 0:
                    amounts.append((p.uuid, rc, amount, inv.max_unit))
        if host.sharing_provider:
            inv = sharing[host.sharing_provider].inventories['DISK_GB']
            amount = int(2000 * host.fill)
            if amount > 0:
                amounts.append((host.sharing_provider, 'DISK_GB', amount,
                                inv.max_unit))
        if not amounts:
            continue
        needed = collections.Counter()      # rp: consumers its units need
        for rp, _, amount, max_unit in amounts:
            needed[rp] = max(needed[rp], math.ceil(amount / max_unit))
        n = max(needed.values())
        if vms_per_host:
            n = max(n, vms_per_host)
        everyone = {host.providers[0].uuid, host.sharing_provider}
        first = {}          # rp: the first of the consumers it is split among
        turn = 0
        for rp in needed:
            if vms_per_host and rp not in everyone:
                first[rp] = turn
                turn += needed[rp]
        consumers = [collections.defaultdict(dict) for _ in range(n)]
        for rp, rc, amount, _ in amounts:
            among = needed[rp] if rp in first else n
            base, extra = divmod(amount, among)
            for j in range(among):
                share = base + (1 if j < extra else 0)
                if share:
                    consumers[(first.get(rp, 0) + j) % n][rp][rc] = share
        project = rng.randrange(len(cloud.projects))
        for allocs in consumers:
            if not allocs:
                continue
            host.allocations[_uuid(rng)] = {
                'allocations': {rp: {'resources': res}
                                for rp, res in allocs.items()},
                'project_id': cloud.projects[project],
                'user_id': cloud.users[project],
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            }


# -- loading over the API -----------------------------------------------------

class LoadError(Exception):
    pass


class _Errors:
    """Thread-safe error counts by step and status, with one sample each."""

    def __init__(self):
        self._lock = threading.Lock()
        self.counts = collections.Counter()
        self.samples = {}

    def add(self, step, resp):
        key = '%s -> %s' % (step, resp.status)
        with self._lock:
            self.counts[key] += 1
            self.samples.setdefault(key, resp.describe())

    def as_dict(self):
        return {k: {'count': c, 'sample': self.samples[k]}
                for k, c in sorted(self.counts.items())}


def _expect(resp, step, errors, ok=(200, 201, 204)):
    if resp.status in ok:
        return True
    errors.add(step, resp)
    return False


def _generation_of(client, rp_uuid):
    r = client.get('/resource_providers/%s' % rp_uuid)
    data = r.json() if r.status == 200 else None
    return data.get('generation') if isinstance(data, dict) else None


def _put_generational(client, path, body, generation, rp_uuid, step,
                      errors):
    """PUT a body carrying resource_provider_generation; on a generation
    conflict re-read it and try again (twice at most).  Returns the new
    generation, or None on failure."""
    for _ in range(3):
        body['resource_provider_generation'] = generation
        r = client.put(path, body)
        if r.status == 200:
            data = r.json() or {}
            gen = data.get('resource_provider_generation')
            return gen if gen is not None else _generation_of(client,
                                                              rp_uuid)
        if r.status == 409 and r.error_code() == 'placement.concurrent_update':
            generation = _generation_of(client, rp_uuid)
            if generation is not None:
                continue
        errors.add(step, r)
        return None
    errors.add(step, r)
    return None


def create_provider(client, p, errors):
    """Create one provider with its inventories, traits, aggregates."""
    body = {'name': p.name, 'uuid': p.uuid}
    if p.parent_uuid:
        body['parent_provider_uuid'] = p.parent_uuid
    r = client.post('/resource_providers', body)
    if not _expect(r, 'POST /resource_providers', errors):
        return False
    data = r.json() or {}
    gen = data.get('generation')
    if gen is None:
        gen = _generation_of(client, p.uuid)
    base = '/resource_providers/%s' % p.uuid
    if p.inventories:
        gen = _put_generational(
            client, base + '/inventories',
            {'inventories': {rc: inv.as_dict()
                             for rc, inv in p.inventories.items()}},
            gen, p.uuid, 'PUT /resource_providers/{uuid}/inventories', errors)
        if gen is None:
            return False
    if p.traits:
        gen = _put_generational(
            client, base + '/traits', {'traits': sorted(p.traits)}, gen,
            p.uuid, 'PUT /resource_providers/{uuid}/traits', errors)
        if gen is None:
            return False
    if p.aggregates:
        gen = _put_generational(
            client, base + '/aggregates', {'aggregates': p.aggregates}, gen,
            p.uuid, 'PUT /resource_providers/{uuid}/aggregates', errors)
        if gen is None:
            return False
    return True


def create_host(client, host, errors):
    """The host's providers, parents first.  Stops at the first failure."""
    for p in host.providers:
        if not create_provider(client, p, errors):
            return False
    return True


def post_allocations(client, host, errors):
    """The host's seeded consumers in one POST /allocations (retrying
    concurrent updates, which the shared storage providers cause)."""
    if not host.allocations:
        return True
    rng = random.Random(host.index)
    for attempt in range(20):
        if attempt:
            time.sleep(rng.uniform(0, 0.05 * attempt))
        r = client.post('/allocations', host.allocations)
        if r.status == 204:
            return True
        if not (r.status == 409
                and r.error_code() == 'placement.concurrent_update'):
            break
    errors.add('POST /allocations', r)
    return False


def _run_pool(fn, items, workers, deadline):
    """fn(item) -> bool over items in a thread pool; returns (ok, failed)."""
    ok = failed = 0
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, item) for item in items]
        try:
            for fut in concurrent.futures.as_completed(
                    futures, timeout=max(1.0, deadline - time.monotonic())):
                if fut.result():
                    ok += 1
                else:
                    failed += 1
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
    return ok, failed


def load_cloud(client, cloud, workers=16, timeout=3600.0, progress=None):
    """Load ``cloud`` into the service behind ``client``.

    Returns a dict of timings and error counts; raises LoadError only when
    nothing at all could be created (the service is unusable).
    """
    deadline = time.monotonic() + timeout
    errors = _Errors()
    result = {'workers': workers}
    say = progress or (lambda msg: None)

    start = time.perf_counter()
    for name in CUSTOM_TRAITS:
        _expect(client.put('/traits/%s' % name), 'PUT /traits/{name}',
                errors)
    ok_sharing = sum(create_provider(client, p, errors) for p in cloud.sharing)
    done = [0]
    lock = threading.Lock()
    step = max(1, len(cloud.hosts) // 10)

    def host_task(host):
        res = create_host(client, host, errors)
        with lock:
            done[0] += 1
            if done[0] % step == 0:
                say('  %s: %d/%d hosts' % (client.name, done[0],
                                           len(cloud.hosts)))
        return res

    ok, failed = _run_pool(host_task, cloud.hosts, workers, deadline)
    providers_s = time.perf_counter() - start
    result['providers'] = {
        'seconds': round(providers_s, 3),
        'hosts_ok': ok, 'hosts_failed': failed,
        'sharing_ok': ok_sharing, 'sharing_failed':
            len(cloud.sharing) - ok_sharing,
        'providers_per_s': round(cloud.provider_count / providers_s, 1),
    }
    if ok == 0 and cloud.hosts:
        raise LoadError('%s: no host could be created: %s'
                        % (client.name, errors.as_dict()))

    start = time.perf_counter()
    ok, failed = _run_pool(lambda h: post_allocations(client, h, errors),
                           cloud.hosts, workers, deadline)
    allocs_s = time.perf_counter() - start
    result['allocations'] = {
        'seconds': round(allocs_s, 3),
        'hosts_ok': ok, 'hosts_failed': failed,
        'consumers': cloud.consumer_count,
        'consumers_per_s': round(cloud.consumer_count / allocs_s, 1),
    }
    result['total_seconds'] = round(providers_s + allocs_s, 3)
    result['errors'] = errors.as_dict()
    return result
