"""How long GET /tachyon/capacity takes on the bench's cloud.

    python -m bench.capacity --hosts 10000 [--repeat 20]

Serves Tachyon (embedded engine), loads the seeded cloud of ``--hosts``
hosts (bench/cloud.py: NUMA trees, SR-IOV PFs, vGPUs, shared storage,
hosts 0-80 % full), then asks for the capacity of a few flavors
``--repeat`` times each, with and without ``per_aggregate``, and prints
per request the first and p50 / p95 / max
of the others in milliseconds, with the count found.  Then again with a
claim between two rounds: every round sees a new graph version, with one
tree changed, as a cloud under load does.
"""
import argparse
import json
import statistics
import tempfile
import time
import uuid

from bench import client as http
from bench import cloud as bench_cloud
from tachyon_placement.tests.functional import served

FLAVORS = [
    ('m1.small', 'resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20'),
    ('m1.xlarge', 'resources=VCPU:16,MEMORY_MB:65536,DISK_GB:160'),
    ('pinned, one NUMA node',
     'resources=DISK_GB:40&resources1=PCPU:8,MEMORY_MB:16384'
     '&required1=HW_NUMA_ROOT&group_policy=none'),
    ('SR-IOV port',
     'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20'
     '&resources1=SRIOV_NET_VF:1,NET_BW_EGR_KILOBIT_PER_SEC:1000000'
     '&required1=CUSTOM_PHYSNET1&group_policy=none'),
]


def _timed(api, path):
    started = time.perf_counter()
    response = api.request('GET', path, headers={
        'OpenStack-API-Version': 'tachyon 1.0'})
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise RuntimeError('%s: %s' % (path, response.describe()))
    return elapsed, response.json()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--repeat', type=int, default=20)
    parser.add_argument('--json', help='write the results here')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='tachyon-capacity-') as workdir:
        api = served.ServedPlacement(workdir).start()
        try:
            client = http.Client('tachyon', '127.0.0.1', api.port)
            cloud = bench_cloud.build_cloud(args.hosts)
            loaded = bench_cloud.load_cloud(client, cloud)
            print('loaded %d hosts (%d providers) in %.0f s'
                  % (args.hosts, cloud.provider_count,
                     loaded['total_seconds']))
            results = []
            target = cloud.hosts[0].providers[0].uuid
            rounds = [(name, query, per_aggregate, writes)
                      for writes in (False, True)
                      for name, query in FLAVORS
                      for per_aggregate in (False, True)]
            for name, query, per_aggregate, writes in rounds:
                path = '/tachyon/capacity?' + query + (
                    '&per_aggregate=true' if per_aggregate else '')
                cold, body = _timed(client, path)
                warm = []
                for _ in range(args.repeat):
                    if writes:
                        # A claim of one VCPU on the first host: one
                        # tree changed, a new graph version.
                        client.put('/allocations/%s' % uuid.uuid4(), {
                            'allocations': {target: {
                                'resources': {'VCPU': 1}}},
                            'project_id': 'bench', 'user_id': 'bench',
                            'consumer_generation': None,
                            'consumer_type': 'INSTANCE'})
                    elapsed, body = _timed(client, path)
                    warm.append(elapsed)
                warm.sort()
                result = {
                    'flavor': name, 'per_aggregate': per_aggregate,
                    'claim_between': writes,
                    'total': body['total'],
                    'hosts_fitting': len(body['hosts']),
                    'first_ms': round(cold, 1),
                    'p50_ms': round(statistics.median(warm), 1),
                    'p95_ms': round(warm[int(0.95 * (len(warm) - 1))],
                                    1),
                    'max_ms': round(warm[-1], 1)}
                results.append(result)
                print('%-22s per_aggregate=%-5s claim between=%-5s '
                      'total %7d on %5d hosts: first %7.1f ms, p50 '
                      '%7.1f, p95 %7.1f, max %7.1f'
                      % (name, per_aggregate, writes, result['total'],
                         result['hosts_fitting'], result['first_ms'],
                         result['p50_ms'], result['p95_ms'],
                         result['max_ms']))
            if args.json:
                with open(args.json, 'w') as out:
                    json.dump({'hosts': args.hosts, 'results': results},
                              out, indent=2)
        finally:
            api.stop()


if __name__ == '__main__':
    main()
