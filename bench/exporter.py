"""The bench's metrics exporter: per-host CPU utilisation and per-NUMA-node
free memory for every host of the seeded cloud, as Prometheus scrapes
them from node_exporter-based recording rules in a real deployment.

    python -m bench.exporter --port 9500 --series FILE

FILE is JSON written by bench/telemetry.py: ``{"hosts": [name, ...],
"numa": [provider uuid, ...], "seed": 42}``.  Every scrape answers new
values (a seeded base per series plus a slow drift), so each telemetry
refresh stores changed values and every API process re-reads them, as in
a cloud whose load moves.

It runs in Tachyon's interpreter (prometheus-client is in
bench/requirements.txt); the harness itself stays stdlib-only.
"""
import argparse
import json
import math
import random
import signal
import threading
import time

import prometheus_client
from prometheus_client import core
from prometheus_client import registry as prom_registry

CPU_METRIC = 'bench_host_cpu_utilisation'
NUMA_METRIC = 'bench_numa_free_megabytes'


class CloudCollector(prom_registry.Collector):
    """Yields the two gauge families with one sample per host / NUMA
    provider; values drift with a period of a few minutes."""

    def __init__(self, hosts, numa, seed):
        rng = random.Random(seed)
        self.hosts = [(name, rng.uniform(5, 90), rng.uniform(0, 6.3))
                      for name in hosts]
        self.numa = [(uuid, rng.uniform(1024, 65536), rng.uniform(0, 6.3))
                     for uuid in numa]

    def collect(self):
        phase = time.time() / 120.0
        cpu = core.GaugeMetricFamily(
            CPU_METRIC, 'CPU utilisation of a host, percent',
            labels=['host'])
        for name, base, offset in self.hosts:
            cpu.add_metric([name], min(100.0, max(
                0.0, base + 10 * math.sin(phase + offset))))
        yield cpu
        numa = core.GaugeMetricFamily(
            NUMA_METRIC, 'Free memory of a NUMA node, MiB',
            labels=['provider'])
        for uuid, base, offset in self.numa:
            numa.add_metric([uuid], max(
                0.0, base * (1 + 0.2 * math.sin(phase + offset))))
        yield numa


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.exporter')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--series', required=True)
    args = parser.parse_args(argv)
    with open(args.series) as f:
        series = json.load(f)
    registry = prometheus_client.CollectorRegistry()
    registry.register(CloudCollector(series['hosts'], series['numa'],
                                     series.get('seed', 0)))
    server, thread = prometheus_client.start_http_server(
        args.port, addr='127.0.0.1', registry=registry)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: done.set())
    signal.signal(signal.SIGINT, lambda signum, frame: done.set())
    done.wait()
    server.shutdown()


if __name__ == '__main__':
    main()
