"""The herd bench through Nova's own scheduler: how concurrent boots spread
over equally loaded hosts, with and without Tachyon's weigher (a metric
weigher with ``placed_load``).

    HERD_SERVERS=80 HERD_CLIENTS=16 nova_functional/run.sh --bench herd

In Nova 34.0.0's functional framework (its API, conductor, scheduler and
fake virt driver; Tachyon's app in the placement fixture's place): 20
compute hosts, Debian's Prometheus scraping an exporter that shows every
host at the same 50 % CPU, Tachyon collecting every 30 s (so the metric
never moves during a run), and HERD_CLIENTS green threads each booting
servers one after another through Nova's API until HERD_SERVERS are
ACTIVE (RPC casts stay casts: the scheduler handles the requests
concurrently, as a scheduler's workers do).  Three runs, each on fresh
services: Nova's weighers alone; with Tachyon's weigher (multiplier 10)
ordering coolest first; and the same with ``placed_load`` (each VCPU
claimed since the sample counts 100/160 points of CPU).  The cloud holds
160 servers of the flavor (8 per fake host): 80 fill half of it, so where
they land is the scheduler's choice, not the capacity's.  Printed: the
servers per host (max / mean, stdev), how many boots ended in error, and
the claims Nova's scheduler lost to another one (409 from PUT
/allocations: a retry or an alternate host) and the reschedules
(the conductor sending a boot back to the scheduler).
"""
import collections
import json
import logging
import os
import statistics
import time

import eventlet

import test_tachyon_weigher as base

HOSTS = ['herd%02d' % number for number in range(20)]
# MediumFakeDriver: 10 VCPUs at Nova's initial allocation ratio of 16.
VCPU_CAPACITY = 160.0


class _Counting:
    """Counts Tachyon's answers to Nova by (method, route, status)."""

    def __init__(self, app):
        self.app = app
        self.counts = collections.Counter()

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        route = path.split('/')[1] if path.count('/') else path

        def counted(status, headers, exc_info=None):
            self.counts[(environ['REQUEST_METHOD'], route,
                         int(status.split()[0]))] += 1
            return start_response(status, headers, exc_info)
        return self.app(environ, counted)


class _Reschedules(logging.Handler):
    """Counts the conductor's reschedules (its debug line says so)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record):
        if record.getMessage() == 'Rescheduling: True':
            self.count += 1


class HerdBench(base.TelemetryTest):
    """One run (see the module's docstring), as HERD_MODE (nova, weigher
    or placed_load), HERD_SERVERS and HERD_CLIENTS say."""
    HOSTS = HOSTS
    CAST_AS_CALL = False
    REFRESH = 30

    def setUp(self):
        self.mode = os.environ.get('HERD_MODE', 'nova')
        # Nova's weighers alone: Tachyon's weigher not even loaded.
        self.WITH_TACHYON = self.mode != 'nova'
        self.counting = None
        # The bench boots more servers than a project's default quota.
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')

        def count(app):
            self.counting = _Counting(app)
            return self.counting
        base.tachyon_in_placement.WRAPPERS.append(count)
        self.addCleanup(base.tachyon_in_placement.WRAPPERS.remove, count)
        self.rescheduled = _Reschedules()
        conductor = logging.getLogger('nova.conductor.manager')
        conductor.addHandler(self.rescheduled)
        self.addCleanup(conductor.removeHandler, self.rescheduled)
        level = conductor.level
        conductor.setLevel(logging.DEBUG)
        self.addCleanup(conductor.setLevel, level)
        super().setUp()

    def test_herd(self):
        mode = self.mode
        servers = int(os.environ.get('HERD_SERVERS', 80))
        clients = int(os.environ.get('HERD_CLIENTS', 16))
        response = self.tachyon('PUT', '/tachyon/metrics/cpu', {
            'query': 'host_cpu_utilisation', 'label': 'instance',
            'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}})
        assert response.status_code == 201, response.text
        scorer = {'type': 'metric', 'metric': 'cpu'}
        if mode == 'placed_load':
            scorer['placed_load'] = {'VCPU': 100.0 / VCPU_CAPACITY}
        if mode != 'nova':
            self.flags(weight_multiplier=10.0, group='tachyon')
            self.store_weigher('coolest', {'weight': 1, 'scorer': scorer})
        load = {host: 50 for host in self.HOSTS}
        if mode == 'nova':
            self.write_values(load)     # nothing of Tachyon's weighs it
        else:
            self.set_load(**load)
        flavor = self.api.get_flavors()[0]['id']
        boots = collections.Counter()
        started = time.monotonic()

        def client(number, count):
            for index in range(count):
                server = self.api.post_server({'server': {
                    'name': 'herd-%d-%d' % (number, index),
                    'imageRef': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
                    'flavorRef': flavor, 'networks': 'none'}})
                server = self.api.get_server(server['id'])
                while server['status'] not in ('ACTIVE', 'ERROR'):
                    eventlet.sleep(0.05)
                    server = self.api.get_server(server['id'])
                boots[server['status']] += 1

        share, extra = divmod(servers, clients)
        pool = eventlet.GreenPool(clients)
        threads = [pool.spawn(client, number, share + (number < extra))
                   for number in range(clients)]
        for thread in threads:
            thread.wait()       # a client's failure fails the run
        seconds = time.monotonic() - started
        per_host = collections.Counter(
            server['OS-EXT-SRV-ATTR:host']
            for server in self.api.get_servers(detail=True)
            if server['status'] == 'ACTIVE')
        counts = [per_host.get(host, 0) for host in self.HOSTS]
        mean = statistics.mean(counts)
        lost = sum(count for (method, route, status), count
                   in self.counting.counts.items()
                   if method == 'PUT' and route == 'allocations'
                   and status == 409)
        result = {
            'mode': mode, 'servers': servers,
            'clients': clients, 'seconds': round(seconds, 1),
            'active': boots['ACTIVE'], 'error': boots['ERROR'],
            'hosts_used': sum(1 for count in counts if count),
            'per_host_max': max(counts), 'per_host_min': min(counts),
            'max_over_mean': round(max(counts) / mean, 2) if mean else None,
            'stdev': round(statistics.pstdev(counts), 2),
            'claims_lost_409': lost,
            'reschedules': self.rescheduled.count,
        }
        with open(os.environ['HERD_RESULTS'], 'a') as out:
            out.write(json.dumps(result) + '\n')


def table(results_file):
    """The runs of ``results_file`` as a Markdown table."""
    lines = ['| run | servers | hosts used | per host max / min | max / mean '
             '| stdev | claims lost (409) | reschedules | errors | seconds |',
             '|---|---|---|---|---|---|---|---|---|---|']
    with open(results_file) as results:
        for line in results:
            run = json.loads(line)
            lines.append(
                '| %(mode)s | %(active)d | %(hosts_used)d | %(per_host_max)d '
                '/ %(per_host_min)d | %(max_over_mean)s | %(stdev)s | '
                '%(claims_lost_409)d | %(reschedules)d | %(error)d | '
                '%(seconds)s |' % run)
    return '\n'.join(lines)


if __name__ == '__main__':
    import sys
    print(table(sys.argv[1]))
