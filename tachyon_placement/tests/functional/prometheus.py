"""A real Prometheus (Debian's package, /usr/bin/prometheus) scraping an
exporter the test controls (prometheus-client serving per-host gauges),
for the telemetry tests."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import prometheus_client
import pytest

from tachyon_placement.tests.functional import served

SCRAPE_SECONDS = 1


def _start(argv, log_path, ready_url, timeout=60):
    """Start ``argv`` logging to ``log_path``; the process, once
    ``ready_url`` answers 200."""
    with open(log_path, 'ab') as log:
        process = subprocess.Popen(argv, stdout=log,
                                   stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError('%s exited (log: %s)' % (argv[0], log_path))
        try:
            with urllib.request.urlopen(ready_url, timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    _stop(process)
    raise RuntimeError('%s did not start (log: %s)' % (argv[0], log_path))


def _stop(process):
    if process and process.poll() is None:
        process.terminate()
        process.wait(timeout=30)


class _LoopbackServer:
    """A server process of a test on a loopback port: ``port``, and
    ``process`` once started."""

    port = None
    process = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def stop(self):
        _stop(self.process)


class Exporter:
    """Per-host CPU utilisation, as node_exporter-based recording rules
    give it: ``host_cpu_utilisation{instance="<host>:9100"}``."""

    def __init__(self):
        self.registry = prometheus_client.CollectorRegistry()
        self.cpu = prometheus_client.Gauge(
            'host_cpu_utilisation', 'CPU utilisation of a host, percent',
            ['instance'], registry=self.registry)
        self.numa_free = None
        self.numa_node_free = None
        self.port = served.free_port()
        self.server, self.thread = prometheus_client.start_http_server(
            self.port, addr='127.0.0.1', registry=self.registry)

    def set_cpu(self, host, percent):
        self.cpu.labels(instance='%s:9100' % host).set(percent)

    def set_numa_free(self, provider_uuid, megabytes):
        """Free memory of a NUMA node, by the uuid of its provider (as a
        recording rule joining node_memory_numa_MemFree to Nova's NUMA
        providers would give it)."""
        if self.numa_free is None:
            self.numa_free = prometheus_client.Gauge(
                'numa_free_megabytes', 'Free memory of a NUMA node',
                ['provider'], registry=self.registry)
        self.numa_free.labels(provider=provider_uuid).set(megabytes)

    def set_numa_node_free(self, host, node, megabytes):
        """Free memory of NUMA node ``node`` of ``host``, as
        node_exporter's node_memory_numa_MemFree (bytes) divided into
        MiB by a recording rule: by instance and node labels."""
        if self.numa_node_free is None:
            self.numa_node_free = prometheus_client.Gauge(
                'node_numa_free_megabytes', 'Free memory per NUMA node',
                ['instance', 'node'], registry=self.registry)
        self.numa_node_free.labels(instance='%s:9100' % host,
                                   node=str(node)).set(megabytes)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Prometheus(_LoopbackServer):
    """Scraping the exporter on ``exporter_port`` every SCRAPE_SECONDS as
    job ``job``."""

    def __init__(self, workdir, exporter_port, job='hosts'):
        self.binary = shutil.which('prometheus')
        if self.binary is None:
            pytest.skip('no prometheus binary (Debian package prometheus; '
                        'tools/run-tests.sh installs it)')
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = served.free_port()
        self.config = os.path.join(self.workdir, 'prometheus.yml')
        with open(self.config, 'w') as out:
            out.write(
                'global:\n'
                '  scrape_interval: %ds\n'
                '  evaluation_interval: %ds\n'
                'scrape_configs:\n'
                '  - job_name: %s\n'
                # The exporter speaks for several hosts: keep its
                # instance labels (as for a Pushgateway or federation).
                '    honor_labels: true\n'
                '    static_configs:\n'
                "      - targets: ['127.0.0.1:%d']\n"
                % (SCRAPE_SECONDS, SCRAPE_SECONDS, job, exporter_port))
        self.process = None

    def start(self):
        self.process = _start(
            [self.binary, '--config.file=%s' % self.config,
             '--storage.tsdb.path=%s' % os.path.join(self.workdir, 'data'),
             '--web.listen-address=127.0.0.1:%d' % self.port],
            os.path.join(self.workdir, 'prometheus.log'),
            self.url + '/-/ready')
        return self

    def query(self, promql):
        """The instant vector ``promql`` gives now: [(labels, value)]."""
        url = '%s/api/v1/query?%s' % (self.url, urllib.parse.urlencode(
            {'query': promql}))
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        assert answer['status'] == 'success', answer
        return [(item['metric'], float(item['value'][1]))
                for item in answer['data']['result']]


# Serves Aetos's WSGI application (argv: config file, port).
_AETOS_SERVER = '''
import sys
from wsgiref import simple_server
from aetos import app
application = app.build_wsgi_app(['--config-file', sys.argv[1]])
simple_server.make_server('127.0.0.1', int(sys.argv[2]),
                          application).serve_forever()
'''


class Aetos(_LoopbackServer):
    """OpenStack's Keystone-aware Prometheus proxy (PyPI aetos) in front of
    a Prometheus, with ``auth_mode = noauth``: without Keystone no token
    says who asks, so the policy lets every caller query all projects
    (what the service role may do with Keystone)."""

    def __init__(self, workdir, prometheus_port):
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = served.free_port()
        self.config = os.path.join(self.workdir, 'aetos.conf')
        policy = os.path.join(self.workdir, 'policy.yaml')
        with open(policy, 'w') as out:
            out.write('"telemetry:query:all_projects": "@"\n')
        with open(self.config, 'w') as out:
            out.write('[DEFAULT]\nauth_mode = noauth\n'
                      '[prometheus]\nhost = 127.0.0.1\nport = %d\n'
                      '[oslo_policy]\npolicy_file = %s\n'
                      % (prometheus_port, policy))
        self.process = None

    def start(self):
        self.process = _start(
            [sys.executable, '-c', _AETOS_SERVER, self.config,
             str(self.port)],
            os.path.join(self.workdir, 'aetos.log'),
            self.url + '/healthcheck')
        return self
