"""The candidate search alone, in process: domain.candidates over a
synthetic cloud, no engine, no HTTP.

    python -m bench.search --hosts 1000 [--rounds 7] [--checkout DIR]

For comparing two checkouts of the search (a refactor, an optimisation)
on a machine whose HTTP figures move by 2x between runs: run it for each
(``--checkout``: another checkout's directory, whose tachyon_placement
is searched), alternating, several times.  The cloud: hosts with VCPU,
MEMORY_MB and DISK_GB partly used, two NUMA children (PCPU, MEMORY_MB)
and two PFs (SRIOV_NET_VF) each.  Per request shape, the median time of
a search on new nodes (cold: nothing remembered on them) and of the same
search again (warm: what a worker answers once its copy of the graph has
seen the shape), in milliseconds, with the number of candidates found.
Prints one JSON document.
"""
import argparse
import importlib
import json
import random
import statistics
import sys
import time


def shapes(domain):
    """{name: (groups, request-wide parameters)} of the requests timed."""
    group = domain.RequestGroup
    return {
        'flat': (
            [group(resources={'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 20})],
            domain.RequestWide(limit=1000)),
        'flat_limit_50': (
            [group(resources={'VCPU': 2, 'MEMORY_MB': 4096})],
            domain.RequestWide(limit=50)),
        'numa_isolated': (
            [group(resources={'DISK_GB': 20}),
             group(suffix='1', resources={'PCPU': 4, 'MEMORY_MB': 8192},
                   required_traits=[{'HW_NUMA_ROOT'}]),
             group(suffix='2', resources={'PCPU': 4, 'MEMORY_MB': 8192},
                   required_traits=[{'HW_NUMA_ROOT'}])],
            domain.RequestWide(limit=1000, group_policy='isolate')),
        'sriov': (
            [group(resources={'VCPU': 2, 'MEMORY_MB': 4096}),
             group(suffix='1', resources={'SRIOV_NET_VF': 1},
                   required_traits=[{'CUSTOM_PHYSNET1'}])],
            domain.RequestWide(limit=1000, group_policy='none')),
    }


def cloud(domain, models, hosts, seed):
    """[ProviderNode] of ``hosts`` trees (new nodes each call)."""
    rng = random.Random(seed)
    nodes = []
    for host in range(hosts):
        root = 'host-%05d' % host
        used = rng.randint(0, 12)
        nodes.append(domain.ProviderNode(
            root, seq=len(nodes),
            traits={'HW_CPU_X86_AVX2'} | (
                {'CUSTOM_FAST'} if host % 3 == 0 else set()),
            aggregates={'agg-%d' % (host % 10)},
            inventories={
                'VCPU': models.Inventory('VCPU', 32, allocation_ratio=4.0,
                                         used=used),
                'MEMORY_MB': models.Inventory('MEMORY_MB', 131072,
                                              used=used * 2048),
                'DISK_GB': models.Inventory('DISK_GB', 1000,
                                            used=used * 20)}))
        for numa in range(2):
            nodes.append(domain.ProviderNode(
                '%s-numa%d' % (root, numa), parent_uuid=root,
                root_uuid=root, seq=len(nodes), traits={'HW_NUMA_ROOT'},
                inventories={
                    'PCPU': models.Inventory('PCPU', 16,
                                             used=rng.randint(0, 16)),
                    'MEMORY_MB': models.Inventory('MEMORY_MB', 65536)}))
        for pf in range(2):
            nodes.append(domain.ProviderNode(
                '%s-pf%d' % (root, pf), parent_uuid=root, root_uuid=root,
                seq=len(nodes), traits={'CUSTOM_PHYSNET%d' % pf},
                inventories={'SRIOV_NET_VF': models.Inventory(
                    'SRIOV_NET_VF', 8, used=rng.randint(0, 8))}))
    return nodes


def _search(domain, snapshot, groups, wide):
    started = time.perf_counter()
    found = domain.find_candidates(snapshot, groups, wide,
                                   domain.Settings())
    return time.perf_counter() - started, len(found.allocation_requests)


def measure(domain, models, hosts, rounds, seed=7):
    results = {}
    for name, (groups, wide) in shapes(domain).items():
        cold, warm, found = [], [], None
        for _round in range(rounds):
            snapshot = domain.Snapshot(cloud(domain, models, hosts, seed))
            seconds, found = _search(domain, snapshot, groups, wide)
            cold.append(seconds)
            warm.extend(_search(domain, snapshot, groups, wide)[0]
                        for _again in range(5))
        results[name] = {
            'found': found,
            'cold_ms': round(statistics.median(cold) * 1000, 2),
            'warm_ms': round(statistics.median(warm) * 1000, 2)}
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--checkout', help='time the search of this '
                        'checkout (its directory) instead of this one\'s')
    args = parser.parse_args(argv)
    if args.checkout:
        sys.path.insert(0, args.checkout)
    domain = importlib.import_module('tachyon_placement.domain.candidates')
    models = importlib.import_module('tachyon_placement.domain.models')
    print(json.dumps({'search': domain.__file__, 'hosts': args.hosts,
                      'shapes': measure(domain, models, args.hosts,
                                        args.rounds)}))


if __name__ == '__main__':
    main()
