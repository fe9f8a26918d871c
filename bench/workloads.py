"""The measured workloads.

* Read workloads (``GET /allocation_candidates`` of several shapes and
  ``GET /resource_providers`` with filters): one client, the two services
  interleaved request by request (A B B A A B ...), so that machine noise
  (CPU frequency, page cache, other tenants) hits both alike.
* The scheduling loop, as Nova's scheduler does it: each of N concurrent
  clients GETs allocation candidates, PUTs /allocations for a new consumer
  on the first candidate (retrying ``placement.concurrent_update`` 409s up
  to four attempts like Nova's ``@retries``, moving on to the next candidate
  on other 409s, as the scheduler moves on to the next host), then DELETEs
  it.  Interleaved by time slices: A then B, then B then A, ...
* The fill race: 16 clients claim (and keep) allocations on the four hosts
  of the race aggregate until no candidate is left; the number of claims
  must be exactly what the free capacity allows.
* The usage check: no inventory over capacity, and every provider the race
  did not touch back to its seeded usage.

Nothing here raises on a failing service: each request's outcome is
counted, and a service that fails every request of a workload five times
in a row is left out of the rest of that workload.
"""
import collections
import concurrent.futures
import random
import threading
import time
import uuid

from bench import client as http

# Set when the run is interrupted: every loop stops at its next check.
STOP = threading.Event()

# What Nova's flavor + image ask for in the flat case.
FLAT = {'resources': 'VCPU:2,MEMORY_MB:2048,DISK_GB:20', 'limit': '1000'}
FLAT_UNITS = {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}
MAX_CONSECUTIVE_FAILURES = 5


class ReadWorkload:
    def __init__(self, name, path, params, description, kind):
        self.name = name
        self.path = path
        self.params = params
        self.description = description
        self.kind = kind        # 'candidates' or 'providers'

    @property
    def url(self):
        return http.with_query(self.path, self.params)

    def result_size(self, resp):
        """A short summary of what came back, to compare the services."""
        data = resp.json()
        if not isinstance(data, dict):
            return None
        if self.kind == 'candidates':
            return '%d/%d' % (len(data.get('allocation_requests') or ()),
                              len(data.get('provider_summaries') or ()))
        return str(len(data.get('resource_providers') or ()))


def read_workloads(cloud):
    """The read workloads on this cloud."""
    aggs = cloud.shared_aggregates[:2]
    return [
        ReadWorkload(
            'ac_flat', '/allocation_candidates', dict(FLAT),
            'flat: VCPU:2,MEMORY_MB:2048,DISK_GB:20, limit=1000',
            'candidates'),
        ReadWorkload(
            'ac_nested', '/allocation_candidates', {
                'resources': 'DISK_GB:20',
                'resources1': 'PCPU:2,MEMORY_MB:2048',
                'resources2': 'PCPU:2,MEMORY_MB:2048',
                'resources3': 'SRIOV_NET_VF:1,'
                              'NET_BW_EGR_KILOBIT_PER_SEC:10000',
                'required3': 'CUSTOM_PHYSNET1',
                'same_subtree': '1,3',
                'group_policy': 'isolate',
                'limit': '1000'},
            'nested granular: 2 NUMA groups + VF on the first one\'s '
            'subtree, isolate', 'candidates'),
        ReadWorkload(
            'ac_sriov', '/allocation_candidates', {
                'resources': 'VCPU:2,MEMORY_MB:2048,DISK_GB:20',
                'resources1': 'SRIOV_NET_VF:1,'
                              'NET_BW_EGR_KILOBIT_PER_SEC:10000',
                'required1': 'CUSTOM_PHYSNET2',
                'group_policy': 'none',
                'limit': '1000'},
            'flat + SR-IOV VF with bandwidth on CUSTOM_PHYSNET2',
            'candidates'),
        ReadWorkload(
            'ac_sharing', '/allocation_candidates', {
                'resources': 'VCPU:1,MEMORY_MB:1024,DISK_GB:100',
                'member_of': 'in:' + ','.join(aggs),
                'limit': '1000'},
            'shared storage: DISK_GB from sharing providers, member_of '
            'two aggregates', 'candidates'),
        ReadWorkload(
            'rp_filter', '/resource_providers', {
                'resources': 'VCPU:4,MEMORY_MB:4096,DISK_GB:40',
                'required': 'HW_CPU_X86_AVX2,!HW_CPU_X86_AVX512F'},
            'GET /resource_providers with resources and required '
            '(AVX2, not AVX512F)', 'providers'),
        ReadWorkload(
            'rp_resources', '/resource_providers', {
                'resources': 'VCPU:1,MEMORY_MB:1024'},
            'GET /resource_providers?resources= alone: every root and NUMA '
            'node with room, about three providers per host', 'providers'),
        ReadWorkload(
            'rp_in_tree', '/resource_providers', {
                'in_tree': cloud.hosts[len(cloud.hosts) // 2].root.uuid},
            'GET /resource_providers?in_tree= (Nova\'s periodic '
            'refresh of one host)', 'providers'),
    ]


def _candidate_keys(data):
    keys = set()
    for areq in data.get('allocation_requests') or ():
        allocs = areq.get('allocations') or {}
        keys.add(tuple(sorted(
            (rp, rc, amount) for rp, a in allocs.items()
            for rc, amount in (a.get('resources') or {}).items())))
    return keys


def compare_results(workload, bodies, cloud, limit=1000):
    """Compare the first successful answer of each service.

    Candidates are compared as sets of allocation requests, providers as
    sets of uuids.  Not meaningful when an answer was cut by ``limit``
    (which candidates survive the cut is up to each service).
    """
    if len(bodies) != 2 or not all(isinstance(b, dict)
                                   for b in bodies.values()):
        return None
    (na, a), (nb, b) = sorted(bodies.items())
    if workload.kind == 'candidates':
        ka, kb = _candidate_keys(a), _candidate_keys(b)
        truncated = max(len(ka), len(kb)) >= limit
    else:
        ka = {p.get('uuid') for p in a.get('resource_providers') or ()}
        kb = {p.get('uuid') for p in b.get('resource_providers') or ()}
        truncated = False
    names = cloud.by_uuid()
    anchor_bug = 0
    if workload.kind == 'candidates' and (na, nb) == ('placement',
                                                      'tachyon'):
        anchor_bug = _placement_anchor_bug(b, kb - ka, cloud)

    def show(key):
        if isinstance(key, tuple):
            return ', '.join(
                '%s %s:%d' % (names[rp].name if rp in names else rp, rc, n)
                for rp, rc, n in key)
        return names[key].name if key in names else key

    return {
        'match': ka == kb,
        'truncated_by_limit': truncated,
        'only_in_%s' % na: len(ka - kb),
        'only_in_%s' % nb: len(kb - ka),
        'samples_only_in_%s' % na: [show(k) for k in sorted(ka - kb)[:3]],
        'samples_only_in_%s' % nb: [show(k) for k in sorted(kb - ka)[:3]],
        'only_in_tachyon_placement_anchor_bug': anchor_bug,
    }


def _placement_anchor_bug(tachyon_body, only_in_tachyon, cloud):
    """How many of Tachyon's extra candidates Placement drops by its bug.

    Placement 16.0.0 builds the allocation requests of a group that may
    span providers (the unnumbered one) per anchor tree into a set whose
    equality ignores the anchor; a request served by a sharing provider
    alone is therefore kept for one arbitrary tree of the aggregate, and
    every other tree loses it when numbered groups must join it (see
    gabbits/candidates-sharing-anchors.yaml).  Those are the candidates
    whose unnumbered group maps to sharing providers only.
    """
    sharing = {p.uuid for p in cloud.sharing}
    count = 0
    for areq in tachyon_body.get('allocation_requests') or ():
        key = tuple(sorted(
            (rp, rc, amount) for rp, alloc in areq['allocations'].items()
            for rc, amount in (alloc.get('resources') or {}).items()))
        if key not in only_in_tachyon:
            continue
        unnumbered = set((areq.get('mappings') or {}).get('', ()))
        if unnumbered and unnumbered <= sharing and len(
                areq.get('mappings') or {}) > 1:
            count += 1
    return count


class Stats:
    """Outcomes of one service in one workload (merge per-thread ones)."""

    def __init__(self):
        self.first_body = None
        self.latencies = []         # seconds, successful requests
        self.requests = 0
        self.errors = collections.Counter()
        self.error_samples = {}
        self.results = collections.Counter()
        self.wall = 0.0
        self.claims = 0
        self.claim_latencies = []
        self.op_latencies = collections.defaultdict(list)
        self.puts = 0
        self.conflicts = 0
        self.conflict_codes = collections.Counter()
        self.no_candidates = 0
        self.failed_claims = 0
        self.touched = set()
        self.aborted = None

    def error(self, what, resp):
        key = '%s -> %s' % (what, resp.status)
        self.errors[key] += 1
        self.error_samples.setdefault(key, resp.describe())

    @property
    def error_count(self):
        return sum(self.errors.values())

    def merge(self, other):
        self.latencies += other.latencies
        self.requests += other.requests
        self.errors.update(other.errors)
        for k, v in other.error_samples.items():
            self.error_samples.setdefault(k, v)
        self.results.update(other.results)
        self.claims += other.claims
        self.claim_latencies += other.claim_latencies
        for k, v in other.op_latencies.items():
            self.op_latencies[k] += v
        self.puts += other.puts
        self.conflicts += other.conflicts
        self.conflict_codes.update(other.conflict_codes)
        self.no_candidates += other.no_candidates
        self.failed_claims += other.failed_claims
        self.touched |= other.touched


# -- warming every server worker ----------------------------------------------

def warm_workers(clients, urls, connections, rounds=2):
    """GET each of ``urls`` ``rounds`` times from ``connections``
    connections open at once, per service: requests over one connection
    (the read workloads) reach one server worker, and a worker's first
    search after the cloud was loaded through the API indexes every
    provider again (seconds at 10,000 hosts): a scheduling loop that met
    such a worker measured that build instead of the steady state.  The
    number of outcomes that were not 2xx, per service that had any."""
    failed = {}
    for name, client in clients.items():
        start = threading.Barrier(connections)
        # Not 2xx, per connection (summed once they are all done).
        counts = [0] * connections

        def warm(slot, client=client, start=start, counts=counts):
            # (A Client's connection is its thread's own.)
            try:
                # Every connection is open before the first request.
                client.request('GET', '/')
                start.wait(timeout=600)
                for _ in range(rounds):
                    for url in urls:
                        if not client.request('GET', url).ok:
                            counts[slot] += 1
            finally:
                client.close()
        threads = [threading.Thread(target=warm, args=(slot,))
                   for slot in range(connections)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if sum(counts):
            failed[name] = sum(counts)
    return failed


# -- read workloads, interleaved request by request ---------------------------

def run_read(workload, clients, requests, max_seconds, warmup=2):
    """clients: {service name: Client}.  Returns {service name: Stats}."""
    names = list(clients)
    stats = {n: Stats() for n in names}
    failures = {n: 0 for n in names}
    active = set(names)
    url = workload.url
    for n in names:
        for _ in range(warmup):
            r = clients[n].request('GET', url)
            if not r.ok:
                break
    start = time.monotonic()
    for i in range(requests):
        if STOP.is_set() or not active:
            break
        order = names if i % 2 == 0 else names[::-1]
        for n in order:
            if n not in active:
                continue
            r = clients[n].request('GET', url)
            st = stats[n]
            st.requests += 1
            st.wall += r.elapsed
            if r.status == 200:
                failures[n] = 0
                st.latencies.append(r.elapsed)
                if st.first_body is None:
                    st.first_body = r.json()
                st.results[workload.result_size(r)] += 1
            else:
                failures[n] += 1
                st.error('GET %s' % workload.path, r)
                if failures[n] >= MAX_CONSECUTIVE_FAILURES:
                    st.aborted = ('%d failures in a row'
                                  % MAX_CONSECUTIVE_FAILURES)
                    active.discard(n)
        if time.monotonic() - start > max_seconds:
            break
    return stats


# -- the scheduling loop ------------------------------------------------------

def claim(client, params, cloud, rng, st, keep=False, max_candidates=10,
          backoff=0.05):
    """One scheduling decision, Nova style.  Returns 'claimed', 'empty',
    'failed' (every candidate tried lost) or 'error'."""
    t0 = time.perf_counter()
    r = client.get('/allocation_candidates', **params)
    st.requests += 1
    st.op_latencies['get'].append(r.elapsed)
    if r.status != 200:
        st.error('GET /allocation_candidates', r)
        return 'error'
    areqs = (r.json() or {}).get('allocation_requests') or []
    if not areqs:
        st.no_candidates += 1
        return 'empty'
    consumer = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    project = rng.randrange(len(cloud.projects))
    for cand in areqs[:max_candidates]:
        body = {'allocations': cand.get('allocations'),
                'project_id': cloud.projects[project],
                'user_id': cloud.users[project],
                'consumer_generation': None,
                'consumer_type': 'INSTANCE'}
        if cand.get('mappings'):
            body['mappings'] = cand['mappings']
        for attempt in range(4):
            if attempt:
                # Nova sleeps uniform(0, 2 * attempt) s; scaled down.
                time.sleep(rng.uniform(0, 2.0 * attempt) * backoff)
            p = client.put('/allocations/%s' % consumer, body)
            st.requests += 1
            st.puts += 1
            st.op_latencies['put'].append(p.elapsed)
            if p.status == 204:
                st.claims += 1
                st.claim_latencies.append(time.perf_counter() - t0)
                st.touched.update(body['allocations'] or ())
                if not keep:
                    d = client.delete('/allocations/%s' % consumer)
                    st.requests += 1
                    st.op_latencies['delete'].append(d.elapsed)
                    if d.status != 204:
                        st.error('DELETE /allocations/{consumer}', d)
                return 'claimed'
            if p.status == 409:
                st.conflicts += 1
                code = p.error_code()
                st.conflict_codes[code or 'none'] += 1
                if code == 'placement.concurrent_update':
                    continue
                break       # no room any more: next candidate (host)
            st.error('PUT /allocations/{consumer}', p)
            return 'error'
    st.failed_claims += 1
    return 'failed'


def _claim_loop(client, seconds, params, tenants, seed, backoff):
    """One scheduler: claim() in a loop for ``seconds``; its Stats.
    ``tenants``: the cloud's projects and users (all claim() reads of
    it)."""
    end = time.perf_counter() + seconds
    rng = random.Random(seed)
    st = Stats()
    errors_in_row = 0
    while time.perf_counter() < end and not STOP.is_set():
        res = claim(client, params, tenants, rng, st, backoff=backoff)
        errors_in_row = errors_in_row + 1 if res == 'error' else 0
        if errors_in_row >= MAX_CONSECUTIVE_FAILURES:
            st.aborted = '%d errors in a row' % MAX_CONSECUTIVE_FAILURES
            break
    client.close()
    return st


def _slice(pool, client, concurrency, seconds, params, tenants, seed,
           backoff):
    """concurrency clients loop on claim() for ``seconds``."""
    start = time.perf_counter()
    futures = [pool.submit(_claim_loop, client, seconds, params, tenants,
                           '%s-%d' % (seed, k), backoff)
               for k in range(concurrency)]
    total = Stats()
    for fut in futures:
        st = fut.result()
        total.merge(st)
        total.aborted = total.aborted or st.aborted
    total.wall = time.perf_counter() - start
    return total


def _ready():
    return True


def _pool(concurrency, processes, name):
    """The scheduling loop's clients: threads of this process, or (as
    Nova's scheduler workers are) processes of their own, which at 16
    clients keeps the bench's interpreter lock from being what the loop
    measures."""
    if not processes:
        return concurrent.futures.ThreadPoolExecutor(
            concurrency, thread_name_prefix='sched-%s' % name)
    import multiprocessing
    pool = concurrent.futures.ProcessPoolExecutor(
        concurrency, mp_context=multiprocessing.get_context('spawn'))
    # Started (and their modules imported) before the first slice.
    for fut in [pool.submit(_ready) for _ in range(concurrency)]:
        fut.result()
    return pool


def run_sched(clients, concurrency, seconds, slice_seconds, cloud, seed=0,
              backoff=0.05, params=None, processes=False):
    """The scheduling loop at one concurrency; {service: Stats}."""
    params = params or FLAT
    names = list(clients)
    if len(names) == 1:
        # Slices interleave two services so that the machine's drift falls
        # on both; one service alone gains nothing from them, and each
        # slice's end idles clients until the slowest one's claim is in
        # (about half a claim's time, every slice).
        slice_seconds = seconds
    stats = {n: Stats() for n in names}
    tenants = Tenants(cloud.projects, cloud.users)
    pools = {n: _pool(concurrency, processes, n) for n in names}
    active = set(names)
    slices = {n: slice_seconds for n in names}
    rnd = 0
    try:
        while active and not STOP.is_set():
            order = names if rnd % 2 == 0 else names[::-1]
            for n in order:
                if n not in active or STOP.is_set():
                    continue
                # A slice far shorter than one claim would measure mostly
                # the wait for the last in-flight claim: stretch it to a
                # few claims' time.
                lat = stats[n].claim_latencies
                if lat:
                    slices[n] = max(slice_seconds,
                                    4 * sorted(lat)[len(lat) // 2])
                slices[n] = min(slices[n],
                                max(slice_seconds, seconds - stats[n].wall))
                st = _slice(pools[n], clients[n], concurrency, slices[n],
                            params, tenants, '%s-%s-%d-%d' % (
                                seed, n, concurrency, rnd), backoff)
                wall = st.wall
                stats[n].merge(st)
                stats[n].wall += wall
                if st.aborted and not st.claims:
                    stats[n].aborted = st.aborted
                    active.discard(n)
                elif stats[n].wall >= seconds:
                    active.discard(n)
            rnd += 1
    finally:
        for pool in pools.values():
            pool.shutdown(wait=not STOP.is_set(), cancel_futures=True)
    return stats


# What claim() needs of the cloud (sent to client processes).
Tenants = collections.namedtuple('Tenants', 'projects users')


# -- the fill race ------------------------------------------------------------

def race_expected_claims(cloud):
    """How many FLAT claims the race hosts can take: per host, for each
    requested class, the sum over its tree of free // unit (any provider
    of the tree may serve any class of the unnumbered group); the host
    takes the minimum over classes."""
    used = cloud.expected_usage()
    total = 0
    for h in cloud.race_hosts():
        per_rc = []
        for rc, unit in FLAT_UNITS.items():
            n = 0
            for p in h.providers:
                inv = p.inventories.get(rc)
                if inv and inv.max_unit >= unit:
                    free = inv.capacity - used.get(p.uuid, {}).get(rc, 0)
                    n += max(0, free) // unit
            per_rc.append(n)
        total += min(per_rc)
    return total


def run_race(client, cloud, concurrency=16, max_seconds=300, seed=0,
             backoff=0.05):
    """Claim and keep until the race aggregate is full.  Returns Stats
    with ``expected`` claims attached."""
    params = dict(FLAT, member_of=cloud.race_aggregate)
    expected = race_expected_claims(cloud)
    cap = expected * 2 + 100        # member_of not honoured: stop anyway
    end = time.perf_counter() + max_seconds
    claimed = [0]
    lock = threading.Lock()

    def worker(k):
        rng = random.Random('race-%s-%s-%d' % (seed, client.name, k))
        st = Stats()
        errors_in_row = 0
        while not STOP.is_set() and time.perf_counter() < end:
            with lock:
                if claimed[0] >= cap:
                    break
            res = claim(client, params, cloud, rng, st, keep=True,
                        backoff=backoff)
            if res == 'empty':
                break
            if res == 'claimed':
                with lock:
                    claimed[0] += 1
            errors_in_row = errors_in_row + 1 if res == 'error' else 0
            if errors_in_row >= MAX_CONSECUTIVE_FAILURES:
                st.aborted = '%d errors in a row' % MAX_CONSECUTIVE_FAILURES
                break
        return st

    pool = concurrent.futures.ThreadPoolExecutor(
        concurrency, thread_name_prefix='race-%s' % client.name)
    start = time.perf_counter()
    total = Stats()
    try:
        for fut in [pool.submit(worker, k) for k in range(concurrency)]:
            st = fut.result()
            total.merge(st)
            total.aborted = total.aborted or st.aborted
    finally:
        pool.shutdown(wait=not STOP.is_set(), cancel_futures=True)
    total.wall = time.perf_counter() - start
    total.expected = expected
    total.timed_out = time.perf_counter() >= end
    return total


# -- usage check --------------------------------------------------------------

def check_usages(client, cloud, uuids, exact, workers=8):
    """For each provider: usage <= capacity for every inventory; for those
    in ``exact``, usage equal to the seeded usage too."""
    expected = cloud.expected_usage()
    names = cloud.by_uuid()
    out = {'checked': 0, 'over_capacity': [], 'usage_mismatch': 0,
           'mismatch_samples': [], 'errors': 0, 'error_samples': []}
    lock = threading.Lock()

    def one(rp):
        base = '/resource_providers/%s' % rp
        inv = client.get(base + '/inventories')
        use = client.get(base + '/usages')
        with lock:
            if inv.status != 200 or use.status != 200:
                out['errors'] += 1
                if len(out['error_samples']) < 5:
                    bad = inv if inv.status != 200 else use
                    out['error_samples'].append('%s: %s' % (
                        names[rp].name, bad.describe()))
                return
            out['checked'] += 1
            invs = (inv.json() or {}).get('inventories') or {}
            usages = (use.json() or {}).get('usages') or {}
            for rc, i in invs.items():
                cap = int((i['total'] - i['reserved'])
                          * i['allocation_ratio'])
                used = usages.get(rc, 0)
                if used > cap:
                    out['over_capacity'].append({
                        'provider': names[rp].name, 'uuid': rp,
                        'resource_class': rc, 'used': used,
                        'capacity': cap})
            if rp in exact:
                want = {k: v for k, v in expected.get(rp, {}).items() if v}
                got = {k: v for k, v in usages.items() if v}
                if want != got:
                    out['usage_mismatch'] += 1
                    if len(out['mismatch_samples']) < 5:
                        out['mismatch_samples'].append({
                            'provider': names[rp].name, 'expected': want,
                            'got': got})

    pool = concurrent.futures.ThreadPoolExecutor(workers)
    try:
        for fut in [pool.submit(one, u) for u in sorted(uuids)]:
            if STOP.is_set():
                break
            fut.result()
    finally:
        pool.shutdown(wait=not STOP.is_set(), cancel_futures=True)
    return out


def providers_to_check(cloud, touched, sample, seed=0, full=False):
    """(uuids to check, uuids whose usage must equal the seeded one)."""
    race = {p.uuid for h in cloud.race_hosts() for p in h.providers}
    every = [p.uuid for p in cloud.providers()]
    if full:
        chosen = set(every)
    else:
        rng = random.Random('check-%s' % seed)
        chosen = set(rng.sample(every, min(sample, len(every))))
        chosen |= race | set(touched) | {p.uuid for p in cloud.sharing}
    chosen &= set(every)
    return chosen, chosen - race
