"""Live telemetry for the interop suite: an exporter the steps control
(prometheus-client serving ``host_cpu_utilisation{instance="<host>:9100"}``,
as node_exporter-based recording rules give it) and Debian's Prometheus
(/usr/bin/prometheus) scraping it every second.  The Tachyon server of the
session collects from that Prometheus (``[telemetry] url``).
"""
import os
import shutil
import socket
import subprocess
import time

import prometheus_client
import requests

SCRAPE_SECONDS = 1


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Feed:
    """Start with ``start(workdir)``; None from ``start`` when this machine
    has no Prometheus (the step that needs it then says so)."""

    def __init__(self):
        self.registry = prometheus_client.CollectorRegistry()
        self.cpu = prometheus_client.Gauge(
            'host_cpu_utilisation', 'CPU utilisation of a host, percent',
            ['instance'], registry=self.registry)
        self.server = self.process = None
        self.url = None

    def set_cpu(self, host, percent):
        self.cpu.labels(instance='%s:9100' % host).set(percent)

    def start(self, workdir):
        binary = shutil.which('prometheus')
        if binary is None:
            return None
        exporter_port = _free_port()
        self.server, _thread = prometheus_client.start_http_server(
            exporter_port, addr='127.0.0.1', registry=self.registry)
        port = _free_port()
        config = os.path.join(workdir, 'prometheus.yml')
        with open(config, 'w') as out:
            out.write('global:\n'
                      '  scrape_interval: %ds\n'
                      'scrape_configs:\n'
                      '  - job_name: hosts\n'
                      # One exporter speaks for every host: keep its labels.
                      '    honor_labels: true\n'
                      '    static_configs:\n'
                      "      - targets: ['127.0.0.1:%d']\n"
                      % (SCRAPE_SECONDS, exporter_port))
        log = open(os.path.join(workdir, 'prometheus.log'), 'wb')
        self.process = subprocess.Popen(
            [binary, '--config.file=%s' % config,
             '--storage.tsdb.path=%s' % os.path.join(workdir, 'prometheus'),
             '--web.listen-address=127.0.0.1:%d' % port],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.url = 'http://127.0.0.1:%d' % port
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('prometheus exited (log in %s)' % workdir)
            try:
                if requests.get(self.url + '/-/ready',
                                timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError('prometheus did not start (log in %s)' % workdir)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
