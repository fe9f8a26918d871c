"""The weighed read workloads (``python -m bench --telemetry``): what
Tachyon's candidate requests cost when weighers order them by live
telemetry.

The bench runs a metrics exporter (bench/exporter.py: per-host CPU
utilisation and per-NUMA-node free memory for every host of the cloud,
drifting) and Debian's Prometheus scraping it, points Tachyon's
``[telemetry] url`` at that Prometheus, and after the ordinary read
workloads stores two metrics and three weighers:

* ``coolest``: host CPU utilisation, lower is better (weight 2);
* ``roomiest-numa``: free memory per NUMA node provider, higher is better
  (a provider-level metric: it orders NUMA nodes within a host too);
* ``pack-ram``: MEMORY_MB usage, pack.

Once the collector has stored their values, the candidate workloads run
again on Tachyon alone; the report compares each p50 with the same
workload's p50 without weighers.  The weighers and metrics are removed
afterwards, so the scheduling loop and the race run as without
``--telemetry`` (add ``--tachyon-weigher`` for weighed scheduling).
"""
import json
import os
import shutil
import time

from bench import exporter
from bench import services as svcs

SCRAPE_SECONDS = 5

METRICS = {
    'cpu': {'query': exporter.CPU_METRIC, 'label': 'host',
            'target': 'root'},
    'numa_free': {'query': exporter.NUMA_METRIC, 'label': 'provider',
                  'target': 'provider'},
}
WEIGHERS = {
    'coolest': {'weight': 2, 'scorer': {'type': 'metric', 'metric': 'cpu'}},
    'roomiest-numa': {'weight': 1, 'scorer': {
        'type': 'metric', 'metric': 'numa_free', 'higher_is_better': True}},
    'pack-ram': {'weight': 1, 'scorer': {
        'type': 'usage', 'resource_class': 'MEMORY_MB', 'mode': 'pack'}},
}


class Telemetry:
    """The exporter and Prometheus processes; ``conf()`` is what Tachyon's
    configuration needs to collect from them."""

    name = 'telemetry'

    def __init__(self, cloud, python, refresh_interval):
        self.cloud = cloud
        self.python = python
        self.refresh_interval = refresh_interval
        self.dir = os.path.join(svcs.WORK_DIR, 'telemetry')
        self.exporter = self.prometheus = None
        self.prometheus_port = svcs.free_port()

    def conf(self):
        return ['telemetry.url=http://127.0.0.1:%d' % self.prometheus_port,
                'telemetry.refresh_interval=%d' % self.refresh_interval,
                'telemetry.staleness_limit=%d' % (10 * self.refresh_interval)]

    def start(self):
        # A fresh Prometheus: an earlier run's series would still count.
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        series = os.path.join(self.dir, 'series.json')
        with open(series, 'w') as f:
            json.dump({'seed': self.cloud.seed,
                       'hosts': [h.root.name for h in self.cloud.hosts],
                       'numa': [p.uuid for h in self.cloud.hosts
                                for p in h.providers if p.kind == 'numa']},
                      f)
        exporter_port = svcs.free_port()
        self.exporter = svcs.Proc(
            'bench-exporter', [self.python, '-m', 'bench.exporter',
                               '--port', str(exporter_port),
                               '--series', series],
            cwd=svcs.REPO_DIR)
        binary = svcs.find_binary('prometheus')
        if binary is None:
            svcs.apt_install('prometheus')
            binary = svcs.find_binary('prometheus')
        config = os.path.join(self.dir, 'prometheus.yml')
        with open(config, 'w') as f:
            f.write('global:\n'
                    '  scrape_interval: %ds\n'
                    '  scrape_timeout: %ds\n'
                    'scrape_configs:\n'
                    '  - job_name: bench\n'
                    # One exporter speaks for every host: keep its labels.
                    '    honor_labels: true\n'
                    '    static_configs:\n'
                    "      - targets: ['127.0.0.1:%d']\n"
                    % (SCRAPE_SECONDS, SCRAPE_SECONDS, exporter_port))
        self.prometheus = svcs.Proc(
            'bench-prometheus', [
                binary, '--config.file=%s' % config,
                '--storage.tsdb.path=%s' % os.path.join(self.dir, 'data'),
                '--web.listen-address=127.0.0.1:%d' % self.prometheus_port])
        self._wait_for_series()

    def _wait_for_series(self, timeout=120):
        """Until Prometheus answers the CPU metric for every host."""
        url = ('http://127.0.0.1:%d/api/v1/query?query=count(%s)'
               % (self.prometheus_port, exporter.CPU_METRIC))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in (self.exporter, self.prometheus):
                if not proc.alive():
                    raise svcs.SetupError('%s exited (log: %s)' % (
                        proc.name, proc.log_path))
            try:
                with svcs.urllib.request.urlopen(url, timeout=5) as r:
                    result = json.load(r)['data']['result']
                if result and int(float(result[0]['value'][1])) == len(
                        self.cloud.hosts):
                    svcs.log('telemetry: Prometheus has the series of %d '
                             'hosts' % len(self.cloud.hosts))
                    return
            except (OSError, ValueError, KeyError, IndexError):
                pass
            time.sleep(1)
        raise svcs.SetupError('Prometheus did not scrape the exporter in %ds '
                              '(logs: %s, %s)' % (timeout,
                                                  self.exporter.log_path,
                                                  self.prometheus.log_path))

    def pids(self):
        return [p.pid for p in (self.exporter, self.prometheus)
                if p and p.alive()]

    def stop(self):
        for proc in (self.prometheus, self.exporter):
            if proc:
                proc.stop()


def _put(client, path, body):
    response = client.request('PUT', path, body)
    if response.status not in (200, 201):
        raise svcs.SetupError('PUT %s: %s %s' % (
            path, response.status, response.body[:500]))


def store(client, flat_query, timeout=120):
    """Store METRICS and WEIGHERS, then wait until the collector has
    stored values (the explain of a flat request shows the CPU value of
    its first host); the seconds that took."""
    start = time.monotonic()
    for name, body in METRICS.items():
        _put(client, '/tachyon/metrics/%s' % name, body)
    for name, body in WEIGHERS.items():
        _put(client, '/tachyon/weighers/%s' % name, body)
    path = '/tachyon/explain/allocation_candidates?%s&limit=1' % flat_query
    while time.monotonic() - start < timeout:
        response = client.request('GET', path)
        if response.status == 200:
            hosts = response.json()['hosts']
            metric = next((part['metric'] for host in hosts
                           for part in host['weighers']
                           if part['weigher'] == 'coolest'), None)
            if metric and metric['value'] is not None:
                return round(time.monotonic() - start, 1)
        time.sleep(0.5)
    raise svcs.SetupError('no telemetry values in Tachyon after %ds' %
                          timeout)


def remove(client):
    for name in WEIGHERS:
        client.request('DELETE', '/tachyon/weighers/%s' % name)
    for name in METRICS:
        client.request('DELETE', '/tachyon/metrics/%s' % name)
