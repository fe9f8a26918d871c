"""Plots of the bench's results for the documentation's benchmark page.

    python -m bench.plots [RESULTS.json ...] [--output DIR]

Reads results written by ``python -m bench`` (``--output``), by default
those kept for the documentation in doc/source/contributor/bench-data/,
and draws, Tachyon beside upstream Placement:

- ``latency-by-workload.png``: the median latency of each workload, one
  panel per cloud size;
- ``speedup-by-size.png``: how many times faster Tachyon answers each
  workload (Placement's median over Tachyon's) as the cloud grows;
- ``percentiles.png``: p50, p95 and p99 of each workload on the largest
  cloud;
- ``memory-by-size.png``: the peak resident memory of each service with its
  database (gunicorn's processes plus MariaDB or the embedded FalkorDB)
  by cloud size;
- ``scheduling.png``: claims per second of the scheduling loop (GET
  candidates, PUT the first, as Nova's scheduler) by concurrent clients.

The documentation build runs it (doc/source/conf.py), so the page shows
the kept results' plots.  Adding a result: run the bench with
``--output doc/source/contributor/bench-data/<date>-<hosts>.json``.
"""
import argparse
import collections
import glob
import json
import os

import matplotlib
matplotlib.use('Agg')
from matplotlib import pyplot  # noqa: E402 (after the backend is chosen)
from matplotlib import ticker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), 'doc', 'source', 'contributor',
                    'bench-data')
OUTPUT = os.path.join(os.path.dirname(HERE), 'doc', 'source', 'contributor',
                      'bench-plots')
SERVICES = (('placement', 'Placement 16.0.0', '#9e9e9e'),
            ('tachyon', 'Tachyon', '#1f77b4'))
PERCENTILES = ('p50_ms', 'p95_ms', 'p99_ms')


def load(paths):
    """{hosts: results} of the runs that measured both services (the
    newest run of a cloud size wins)."""
    runs = {}
    for path in sorted(paths):
        with open(path) as source:
            results = json.load(source)
        services = set(results.get('services', ()))
        if not {'tachyon', 'placement'} <= services:
            continue
        runs[results['config']['hosts']] = results
    return dict(sorted(runs.items()))


def read_workloads(results):
    """Names of the read workloads measured on both services, in the
    bench's order (the scheduling loop and the race are drawn apart)."""
    return [name for name, entry in results['workloads'].items()
            if not name.startswith(('sched_', 'race_')) and
            all('latency' in entry.get(service, {})
                for service, _label, _colour in SERVICES)]


def _title(hosts, results):
    """'1000 hosts, 2026-11-29, 2 CPUs': which run a panel shows."""
    return '%d hosts, %s, %s CPUs' % (
        hosts, results.get('started', '')[:10],
        results.get('machine', {}).get('cpus', '?'))


def _bars(axes, names, values_by_service, log=True):
    width = 0.8 / len(SERVICES)
    for index, (service, label, colour) in enumerate(SERVICES):
        axes.bar([position + (index - 0.5) * width
                  for position in range(len(names))],
                 values_by_service[service], width, label=label,
                 color=colour)
    axes.set_xticks(range(len(names)))
    axes.set_xticklabels(names, rotation=30, ha='right', fontsize=8)
    if log:
        _log_scale(axes.yaxis, axes.set_yscale)


def _log_scale(axis, set_scale):
    """A log scale labelled 1, 2, 5, 10, 20, ... rather than powers."""
    set_scale('log')
    axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(
        lambda value, _position: '%g' % value))
    axis.set_minor_formatter(ticker.NullFormatter())


def latency_by_workload(runs, output):
    figure, panels = pyplot.subplots(1, len(runs), squeeze=False,
                                     figsize=(5 * len(runs), 4.2))
    for axes, (hosts, results) in zip(panels[0], runs.items()):
        names = read_workloads(results)
        _bars(axes, names, {
            service: [results['workloads'][name][service]['latency']
                      ['p50_ms'] for name in names]
            for service, _label, _colour in SERVICES})
        axes.set_title(_title(hosts, results))
        axes.set_ylabel('median latency (ms, log scale)')
    panels[0][0].legend()
    return _save(figure, output, 'latency-by-workload.png')


def speedup_by_size(runs, output):
    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    ratios = collections.defaultdict(dict)
    for hosts, results in runs.items():
        for name in read_workloads(results):
            entry = results['workloads'][name]
            tachyon = entry['tachyon']['latency']['p50_ms']
            if tachyon > 0:
                ratios[name][hosts] = (
                    entry['placement']['latency']['p50_ms'] / tachyon)
    for name, by_hosts in ratios.items():
        sizes = sorted(by_hosts)
        axes.plot(sizes, [by_hosts[size] for size in sizes], marker='o',
                  label=name)
    _log_scale(axes.xaxis, axes.set_xscale)
    _log_scale(axes.yaxis, axes.set_yscale)
    axes.set_xlabel('compute hosts in the cloud')
    axes.set_ylabel("Placement's median / Tachyon's (x, log scale)")
    axes.axhline(1, color='black', linewidth=0.5)
    axes.legend(fontsize=7)
    return _save(figure, output, 'speedup-by-size.png')


def percentiles(runs, output):
    hosts, results = list(runs.items())[-1]
    names = read_workloads(results)
    figure, panels = pyplot.subplots(1, len(PERCENTILES), squeeze=False,
                                     figsize=(5 * len(PERCENTILES), 4.2))
    for axes, percentile in zip(panels[0], PERCENTILES):
        _bars(axes, names, {
            service: [results['workloads'][name][service]['latency']
                      [percentile] for name in names]
            for service, _label, _colour in SERVICES})
        axes.set_title('%s, %s' % (percentile[:3], _title(hosts, results)))
        axes.set_ylabel('latency (ms, log scale)')
    panels[0][0].legend()
    return _save(figure, output, 'percentiles.png')


def peak_memory(results, service):
    """The highest resident memory (MiB) measured of a service in a run:
    while the cloud was loaded or during any workload."""
    peaks = [results.get('load', {}).get(service, {}).get('rss_peak_mib')]
    peaks += [entry.get(service, {}).get('rss_peak_mib')
              for entry in results['workloads'].values()]
    return max((peak for peak in peaks if peak), default=None)


def memory_by_size(runs, output):
    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    for service, label, colour in SERVICES:
        sizes = [hosts for hosts, results in runs.items()
                 if peak_memory(results, service)]
        axes.plot(sizes, [peak_memory(runs[size], service)
                          for size in sizes],
                  marker='o', label=label, color=colour)
    _log_scale(axes.xaxis, axes.set_xscale)
    axes.set_xlabel('compute hosts in the cloud')
    axes.set_ylabel('peak resident memory with its database (MiB)')
    axes.set_ylim(bottom=0)
    axes.legend()
    return _save(figure, output, 'memory-by-size.png')


def scheduling(runs, output):
    figure, panels = pyplot.subplots(1, len(runs), squeeze=False,
                                     figsize=(5 * len(runs), 4.2))
    for axes, (hosts, results) in zip(panels[0], runs.items()):
        loops = sorted(
            (int(name.split('_c')[1]), entry)
            for name, entry in results['workloads'].items()
            if name.startswith('sched_c'))
        for service, label, colour in SERVICES:
            points = [(clients, entry[service]['claims_per_s'])
                      for clients, entry in loops
                      if entry.get(service, {}).get('claims_per_s')]
            axes.plot([clients for clients, _ in points],
                      [claims for _, claims in points], marker='o',
                      label=label, color=colour)
        axes.set_title(_title(hosts, results))
        axes.set_xscale('log', base=2)
        axes.xaxis.set_major_formatter(ticker.FuncFormatter(
            lambda value, _position: '%g' % value))
        axes.set_xlabel('concurrent scheduler clients')
        axes.set_ylabel('claims per second')
    panels[0][0].legend()
    return _save(figure, output, 'scheduling.png')


def _save(figure, output, name):
    figure.tight_layout()
    path = os.path.join(output, name)
    figure.savefig(path, dpi=90)
    pyplot.close(figure)
    return path


PLOTS = (latency_by_workload, speedup_by_size, percentiles, memory_by_size,
         scheduling)


def draw(paths=None, output=OUTPUT):
    """The plots' paths, drawn from the results ``paths`` (default: the
    kept ones) into ``output``."""
    runs = load(paths if paths else glob.glob(os.path.join(DATA, '*.json')))
    if not runs:
        raise SystemExit('no results of both services in %s'
                         % (paths or DATA))
    os.makedirs(output, exist_ok=True)
    return [plot(runs, output) for plot in PLOTS]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m bench.plots',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('results', nargs='*',
                        help='results files (default: %s/*.json)' % DATA)
    parser.add_argument('--output', default=OUTPUT,
                        help='where the PNG files go (default %(default)s)')
    args = parser.parse_args(argv)
    for path in draw(args.results, args.output):
        print(path)


if __name__ == '__main__':
    main()
