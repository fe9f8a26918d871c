"""The collector's memory while it runs Cypher scorers for a while.

    python -m bench.scorers --providers 10000 --minutes 10

Serves Tachyon on the embedded engine with a one-second refresh, creates
``--providers`` providers with inventories, stores a scorer that returns
a row per provider and one that returns more rows than there are
providers (the collector disables it), then samples the RSS of the API
process, of the serving engine and of the scorer sandbox every 10 s for
``--minutes``; deletes the weighers and samples once more.  Prints one
line per sample and a summary (the figures go to the bench results page).
"""
import argparse
import tempfile
import time

import psutil

from tachyon_placement.tests.functional import served

PER_PROVIDER = ('MATCH (rp:ResourceProvider)-[inv:PROVIDES]->'
                "(:ResourceClass {name: 'VCPU'}) RETURN rp.uuid AS uuid, "
                'inv.total - coalesce(inv.used, 0) AS score')
TOO_MANY = ('MATCH (a:ResourceProvider), (b:ResourceProvider) '
            'RETURN a.uuid AS uuid, 1 AS score')


def _mib(pid):
    try:
        return psutil.Process(pid).memory_info().rss >> 20
    except (psutil.Error, TypeError):
        return 0


def _sandbox_pids(api_pid, engine_pid):
    return [child.pid for child in psutil.Process(api_pid).children(
        recursive=True) if 'redis-server' in child.name()
        and child.pid != engine_pid]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=10000)
    parser.add_argument('--minutes', type=float, default=10)
    args = parser.parse_args(argv)
    api = served.ServedPlacement(tempfile.mkdtemp(), extra_conf=(
        '[telemetry]\nrefresh_interval = 1\n')).start()
    try:
        for index in range(args.providers):
            uuid = '00000000-0000-4000-8000-%012d' % index
            api.request('POST', '/resource_providers',
                        {'name': 'host-%d' % index, 'uuid': uuid})
            api.request('PUT', '/resource_providers/%s/inventories' % uuid,
                        {'resource_provider_generation': 0,
                         'inventories': {'VCPU': {'total': 8}}})
        print('%d providers' % args.providers)
        for name, query in (('per-provider', PER_PROVIDER),
                            ('too-many', TOO_MANY)):
            status, body = api.request('PUT', '/tachyon/weighers/' + name, {
                'weight': 1, 'scorer': {'type': 'cypher', 'query': query}})
            assert status == 201, body
        started = time.monotonic()
        peak = 0
        samples = []
        while time.monotonic() - started < args.minutes * 60:
            api_mib = _mib(api.process.pid)
            sandboxes = sum(_mib(pid) for pid in _sandbox_pids(
                api.process.pid, api.engine_pid()))
            peak = max(peak, api_mib)
            samples.append(api_mib)
            print('%5.0f s  api %4d MiB  engine %4d MiB  sandbox %4d MiB'
                  % (time.monotonic() - started, api_mib,
                     _mib(api.engine_pid()), sandboxes), flush=True)
            time.sleep(10)
        status = api.request('GET', '/tachyon/weighers/too-many')[1]
        print('too-many: %s' % status['scorer_status'])
        for name in ('per-provider', 'too-many'):
            api.request('DELETE', '/tachyon/weighers/' + name)
        time.sleep(5)
        print('summary: api RSS first %d, last %d, peak %d MiB over %.0f '
              'minutes; after the weighers went %d MiB' % (
                  samples[0], samples[-1], peak, args.minutes,
                  _mib(api.process.pid)))
    finally:
        api.stop()


if __name__ == '__main__':
    main()
