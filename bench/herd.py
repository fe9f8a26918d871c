"""How concurrent schedulers spread claims over equally loaded hosts, with
and without just-placed compensation (a metric weigher's placed_load).

    python -m bench.herd --hosts 20 --claims 200 --schedulers 16

Serves Tachyon (embedded engine) with a real Prometheus (Debian's)
scraping an exporter that shows every host at the same CPU utilisation,
the collector refreshing every ``--refresh`` seconds (30: the default).
A metric weigher orders candidates coolest first.  ``--schedulers``
threads, as Nova's schedulers do, ask for one candidate (limit=1) and
claim it, until ``--claims`` claims succeeded; a claim that loses a race
(409) asks again.  Run once without, once with ``placed_load`` (each on a
fresh service), and prints the claims per host: max / mean and the
standard deviation (an even spread is max/mean 1, stdev 0).
"""
import argparse
import collections
import statistics
import tempfile
import threading
import time
import uuid

from tachyon_placement.tests.functional import prometheus
from tachyon_placement.tests.functional import served

VCPU_PER_HOST = 64


def _ok(result):
    status, body = result
    if status not in (200, 201, 204):
        raise RuntimeError('%s: %s' % (status, body))
    return body


def run(workdir, args, placed_load):
    exporter = prometheus.Exporter()
    prom = prometheus.Prometheus(workdir + '/prometheus', exporter.port)
    prom.start()
    api = served.ServedPlacement(workdir + '/api', extra_conf=(
        '[telemetry]\nurl = %s\nrefresh_interval = %d\n'
        'staleness_limit = %d\nquery_timeout = 5\n'
        % (prom.url, args.refresh, 10 * args.refresh))).start()
    try:
        hosts = {}
        for number in range(args.hosts):
            name = 'herd-%02d' % number
            hosts[name] = str(uuid.uuid4())
            _ok(api.request('POST', '/resource_providers',
                            {'name': name, 'uuid': hosts[name]}))
            _ok(api.request(
                'PUT', '/resource_providers/%s/inventories' % hosts[name],
                {'resource_provider_generation': 0,
                 'inventories': {'VCPU': {'total': VCPU_PER_HOST}}}))
            exporter.set_cpu(name, 50.0)
        _ok(api.request('PUT', '/tachyon/metrics/cpu', {
            'query': 'host_cpu_utilisation', 'label': 'instance',
            'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}}))
        scorer = {'type': 'metric', 'metric': 'cpu'}
        if placed_load:
            # A CPU percentage of a 64-CPU host: a VCPU is 100/64 points.
            scorer['placed_load'] = {'VCPU': 100.0 / VCPU_PER_HOST}
        _ok(api.request('PUT', '/tachyon/weighers/coolest',
                        {'weight': 1, 'scorer': scorer}))
        # Until the collector stored the sample every claim then counts
        # from (the schedulers start right after a refresh).
        deadline = time.monotonic() + 3 * args.refresh + 30
        while time.monotonic() < deadline:
            sources = _ok(api.request('GET',
                                      '/tachyon/telemetry/status'))['sources']
            if any(source['providers_matched'] == args.hosts
                   for source in sources):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError('the collector found no values')
        by_uuid = {value: name for name, value in hosts.items()}
        claims = collections.Counter()
        conflicts = [0]
        under_way = [0]     # claims made or being made: never more
        lock = threading.Lock()
        started = time.monotonic()

        def scheduler():
            while True:
                with lock:
                    if under_way[0] >= args.claims:
                        return
                    under_way[0] += 1
                body = _ok(api.request(
                    'GET', '/allocation_candidates?resources=VCPU:1&limit=1'))
                request = body['allocation_requests'][0]
                status, _ = api.request(
                    'PUT', '/allocations/%s' % uuid.uuid4(), dict(
                        request, project_id='p', user_id='u',
                        consumer_generation=None, consumer_type='INSTANCE'))
                with lock:
                    if status == 204:
                        claims[by_uuid[next(iter(request['allocations']))]] \
                            += 1
                    else:
                        conflicts[0] += 1
                        under_way[0] -= 1

        threads = [threading.Thread(target=scheduler)
                   for _ in range(args.schedulers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        per_host = [claims.get(name, 0) for name in hosts]
        mean = statistics.fmean(per_host)
        return {'placed_load': placed_load, 'claims': sum(per_host),
                'seconds': round(seconds, 2), 'conflicts': conflicts[0],
                'hosts_used': sum(1 for count in per_host if count),
                'max': max(per_host), 'mean': mean,
                'max_over_mean': round(max(per_host) / mean, 2),
                'stdev': round(statistics.pstdev(per_host), 2),
                'per_host': per_host}
    finally:
        api.stop()
        prom.stop()
        exporter.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=20)
    parser.add_argument('--claims', type=int, default=200)
    parser.add_argument('--schedulers', type=int, default=16)
    parser.add_argument('--refresh', type=int, default=30)
    args = parser.parse_args(argv)
    results = []
    for placed_load in (False, True):
        with tempfile.TemporaryDirectory(prefix='tachyon-herd-') as workdir:
            results.append(run(workdir, args, placed_load))
    print('%d schedulers, %d claims over %d equally loaded hosts, refresh '
          '%d s' % (args.schedulers, args.claims, args.hosts, args.refresh))
    print('placed_load  claims  hosts used  max  max/mean  stdev  409s  '
          'seconds')
    for result in results:
        print('%-11s  %6d  %10d  %3d  %8.2f  %5.2f  %4d  %7.1f' % (
            'on' if result['placed_load'] else 'off', result['claims'],
            result['hosts_used'], result['max'], result['max_over_mean'],
            result['stdev'], result['conflicts'], result['seconds']))
        print('  claims per host: %s' % result['per_host'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
