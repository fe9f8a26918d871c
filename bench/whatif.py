"""What what-if sessions cost the real requests, and what a session holds.

    python -m bench.whatif --hosts 1000 --seconds 20

Serves Tachyon (embedded engine) and loads the seeded cloud (bench/cloud.py).
A scheduling loop (``--schedulers`` threads: GET /allocation_candidates
with limit=1, then PUT the claim, as Nova's schedulers do) runs three times
for ``--seconds`` each:

* alone;
* beside ``--sessions`` threads each running Watcher-style drains in what-if
  sessions (open a session, move every consumer of a host elsewhere in it
  through POST /allocations, ask the capacity within it, discard it);
* beside as many threads sending the same reads for real (capacity and
  candidates without a session, no writes): the CPU the reads alone take.

It prints the loop's claims per second and its candidate requests' p50 and
p99 in each run: sessions cost the real requests what their CPU costs
(the second run against the third), nothing more (no lock, no graph
version moved, no cache of the process's own searches touched).  Then what
a session holds: its stored document per consumer moved, and the API
process's resident memory before and after ``--hold`` sessions of
``--moves`` consumers each were opened and used.
"""
import argparse
import json
import statistics
import tempfile
import threading
import time
import uuid

from bench import client as http
from bench import cloud as bench_cloud
from tachyon_placement.tests.functional import served

SESSION = 'OpenStack-Tachyon-Session'
TACHYON = {'OpenStack-API-Version': 'tachyon 1.0'}
FLAVOR = 'resources=VCPU:1,MEMORY_MB:1024'


def _rss_kib(pid):
    with open('/proc/%d/status' % pid) as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def _percentile(values, share):
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))]


class Run:
    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.latencies = []
        self.claims = 0
        self.conflicts = 0
        self.side = 0
        self.errors = []

    def going(self):
        return time.monotonic() < self.deadline


def _scheduler(client, run):
    while run.going():
        started = time.perf_counter()
        response = client.request(
            'GET', '/allocation_candidates?%s&limit=1' % FLAVOR)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            run.errors.append(response.describe())
            continue
        requests = response.json()['allocation_requests']
        if not requests:
            continue
        claim = client.request('PUT', '/allocations/%s' % uuid.uuid4(), dict(
            requests[0], project_id='bench', user_id='bench',
            consumer_generation=None, consumer_type='INSTANCE'))
        with run.lock:
            run.latencies.append(elapsed)
            if claim.status == 204:
                run.claims += 1
            else:
                run.conflicts += 1


def _drains(client, cloud, run, offset, within):
    """Drains of host after host in sessions (``within``), or the same
    reads without a session."""
    number = offset
    while run.going():
        host = cloud.hosts[number % len(cloud.hosts)]
        target = cloud.hosts[(number + 1) % len(cloud.hosts)].root.uuid
        number += 7
        headers = dict(TACHYON)
        if within:
            opened = client.request('POST', '/tachyon/sessions', {},
                                    headers=TACHYON)
            if opened.status != 201:
                run.errors.append(opened.describe())
                time.sleep(0.1)
                continue
            headers[SESSION] = opened.json()['id']
            for consumer, entry in list(host.allocations.items())[:3]:
                moved = {target: {'resources': {'VCPU': 1}}}
                client.request('POST', '/allocations', {consumer: dict(
                    allocations=moved, project_id=entry['project_id'],
                    user_id=entry['user_id'], consumer_generation=1,
                    consumer_type='INSTANCE')},
                    headers={SESSION: headers[SESSION]})
        client.request('GET', '/tachyon/capacity?%s' % FLAVOR,
                       headers=headers)
        client.request('GET', '/allocation_candidates?%s&limit=1' % FLAVOR,
                       headers={key: value for key, value in headers.items()
                                if key == SESSION})
        if within:
            client.request('DELETE', '/tachyon/sessions/%s'
                           % headers[SESSION], headers=TACHYON)
        with run.lock:
            run.side += 1


def measure(client, cloud, args, side):
    run = Run(args.seconds)
    threads = [threading.Thread(target=_scheduler, args=(client, run))
               for _ in range(args.schedulers)]
    if side is not None:
        threads += [threading.Thread(target=_drains,
                                     args=(client, cloud, run, number,
                                           side))
                    for number in range(args.sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {'side': {None: 'alone', True: 'sessions',
                     False: 'same reads, no session'}[side],
            'claims_per_s': round(run.claims / args.seconds, 1),
            'conflicts': run.conflicts,
            'candidates_p50_ms': round(statistics.median(run.latencies), 1),
            'candidates_p99_ms': round(_percentile(run.latencies, 0.99), 1),
            'side_rounds': run.side, 'errors': run.errors[:3]}


def held(client, api, cloud, args):
    """The document bytes per consumer moved, and the API's RSS before and
    after ``--hold`` sessions of ``--moves`` moves each."""
    before = _rss_kib(api.process.pid)
    sizes = []
    for number in range(args.hold):
        opened = client.request('POST', '/tachyon/sessions', {},
                                headers=TACHYON).json()['id']
        for move in range(args.moves):
            target = cloud.hosts[(number * args.moves + move + 1)
                                 % len(cloud.hosts)].root.uuid
            client.request('PUT', '/allocations/%s' % uuid.uuid4(), {
                'allocations': {target: {'resources': {'VCPU': 1}}},
                'project_id': 'bench', 'user_id': 'bench',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'},
                headers={SESSION: opened})
        client.request('GET', '/tachyon/capacity?%s' % FLAVOR,
                       headers=dict(TACHYON, **{SESSION: opened}))
        shown = client.request('GET', '/tachyon/sessions/%s' % opened,
                               headers=TACHYON)
        sizes.append(len(shown.body))
    after = _rss_kib(api.process.pid)
    return {'sessions': args.hold, 'moves_each': args.moves,
            'document_bytes_per_move': round(
                statistics.mean(sizes) / args.moves),
            'api_rss_before_mib': round(before / 1024, 1),
            'api_rss_after_mib': round(after / 1024, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--seconds', type=int, default=20)
    parser.add_argument('--schedulers', type=int, default=4)
    parser.add_argument('--sessions', type=int, default=2)
    parser.add_argument('--hold', type=int, default=30)
    parser.add_argument('--moves', type=int, default=100)
    parser.add_argument('--json', help='write the results here')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='tachyon-whatif-') as workdir:
        api = served.ServedPlacement(
            workdir, extra_conf='[whatif]\nmax_sessions = %d\n'
            % (args.hold + args.sessions + 8)).start()
        try:
            client = http.Client('tachyon', '127.0.0.1', api.port)
            cloud = bench_cloud.build_cloud(args.hosts)
            loaded = bench_cloud.load_cloud(client, cloud)
            print('loaded %d hosts in %.0f s' % (args.hosts,
                                                 loaded['total_seconds']))
            results = [measure(client, cloud, args, side)
                       for side in (None, True, False)]
            for result in results:
                print('%-24s %6.1f claims/s, candidates p50 %6.1f ms, p99 '
                      '%6.1f ms, %d side rounds %s'
                      % (result['side'], result['claims_per_s'],
                         result['candidates_p50_ms'],
                         result['candidates_p99_ms'], result['side_rounds'],
                         result['errors'] or ''))
            holding = held(client, api, cloud, args)
            print('%(sessions)d sessions of %(moves_each)d moves: '
                  '%(document_bytes_per_move)d bytes of document per move; '
                  'API RSS %(api_rss_before_mib).1f -> '
                  '%(api_rss_after_mib).1f MiB' % holding)
            if args.json:
                with open(args.json, 'w') as out:
                    json.dump({'hosts': args.hosts, 'loop': results,
                               'held': holding}, out, indent=2)
        finally:
            api.stop()


if __name__ == '__main__':
    main()
