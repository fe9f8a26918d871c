"""Tachyon vs upstream Placement, side by side on the same seeded cloud.

    python -m bench --hosts 1000
    tox -e bench -- --hosts 1000

Starts both services under gunicorn (Placement 16.0.0 from PyPI on a
private MariaDB, Tachyon on its embedded FalkorDB), loads the same cloud
into both over the API, runs the workloads interleaving the two services,
checks that nothing is over-allocated, prints a table and writes
bench/results/<timestamp>.json.  Everything it started is stopped at the
end, on error, on Ctrl-C, on SIGTERM and when --timeout expires.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

from bench import client as http
from bench import cloud as cloud_mod
from bench import backup as backup_bench
from bench import feed as feed_bench
from bench import report
from bench import services as svcs
from bench import telemetry
from bench import workloads as wl

SCHED_QUERY = 'flat (%s)' % wl.FLAT['resources']


class Interrupted(BaseException):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='python -m bench', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--hosts', type=int, default=1000,
                   help='compute hosts in the seeded cloud (default 1000)')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--vms-per-host', type=int, default=None,
                   help='at least this many consumers fill each host, as '
                        'instances do (default: as few as max_unit allows)')
    p.add_argument('--services', default='placement,tachyon',
                   help='which services to run (default both; one alone '
                        'gives no ratios)')
    p.add_argument('--engine', choices=('falkordb', 'neo4j'),
                   default='falkordb',
                   help="Tachyon's graph engine: the embedded FalkorDB "
                        "(default) or a Neo4j Community server the bench "
                        "starts (tools/neo4j-server.sh)")
    p.add_argument('--neo4j-heap', default='2g',
                   help='JVM heap of that Neo4j server (default 2g)')
    p.add_argument('--neo4j-pagecache', default='512m',
                   help="that server's page cache "
                        '(server.memory.pagecache.size, default 512m; the '
                        'store of a 50,000-host cloud with 10 instances a '
                        'host is 757 MB on disk. Unset, Neo4j would take '
                        "half the machine's free memory)")
    p.add_argument('--neo4j-warmup-hosts', type=int, default=300,
                   help='with --engine neo4j: hosts of a throwaway cloud '
                        'driven through the service before measuring, so '
                        "the JVM's JIT has compiled its hot code (0: "
                        'measure the cold JVM; default 300)')
    p.add_argument('--workers', type=int, default=2,
                   help='gunicorn workers, both services (default 2)')
    p.add_argument('--threads', type=int, default=4,
                   help='gunicorn threads per worker (gthread, default 4)')
    p.add_argument('--load-workers', type=int, default=16,
                   help='client threads loading the cloud (default 16)')
    p.add_argument('--requests', type=int, default=30,
                   help='measured requests per service per read workload '
                        '(default 30)')
    p.add_argument('--read-seconds', type=float, default=180,
                   help='time cap per read workload, both services '
                        '(default 180)')
    p.add_argument('--workloads', default=None,
                   help='comma separated read workloads to run (default '
                        'all: ac_flat,ac_nested,ac_sriov,ac_sharing,'
                        'rp_filter,rp_resources,rp_in_tree; "none" for '
                        'none)')
    p.add_argument('--concurrency', default='1,4,16',
                   help='scheduling loop concurrency levels (default '
                        '1,4,16; "none" to skip)')
    p.add_argument('--sched-seconds', type=float, default=20,
                   help='scheduling loop time per service per level '
                        '(default 20)')
    p.add_argument('--slice-seconds', type=float, default=2.5,
                   help='interleaving slice of the scheduling loop '
                        '(default 2.5; a service measured alone runs its '
                        'whole time in one)')
    p.add_argument('--race-concurrency', type=int, default=16,
                   help='clients in the fill race (0 to skip; default 16)')
    p.add_argument('--race-seconds', type=float, default=300)
    p.add_argument('--sched-clients', choices=('processes', 'threads'),
                   default='processes',
                   help='the scheduling loop\'s clients: a process each, '
                        'as Nova\'s scheduler workers (default), or threads '
                        'of the bench (which at 16 clients spend their time '
                        'waiting for its interpreter lock)')
    p.add_argument('--backoff-scale', type=float, default=0.05,
                   help="scale of Nova's 409 retry sleep uniform(0, 2*try) "
                        "s (default 0.05)")
    p.add_argument('--check-sample', type=int, default=500,
                   help='providers checked at random besides the touched '
                        'ones (default 500)')
    p.add_argument('--full-check', action='store_true',
                   help='check the usages of every provider')
    p.add_argument('--conf', action='append', default=[],
                   metavar='SECTION.KEY=VALUE',
                   help='config option for both services (repeatable), '
                        'e.g. placement.max_allocation_candidates=1000')
    p.add_argument('--placement-conf', action='append', default=[],
                   metavar='SECTION.KEY=VALUE')
    p.add_argument('--tachyon-weigher', action='append', default=[],
                   metavar='NAME=JSON',
                   help="a weigher to store in Tachyon after the load "
                        "(PUT /tachyon/weighers/NAME with the JSON body; "
                        "repeatable), e.g. spread='{\"weight\": 1, "
                        "\"scorer\": {\"type\": \"usage\", "
                        "\"resource_class\": \"VCPU\"}}'")
    p.add_argument('--tachyon-conf', action='append', default=[],
                   metavar='SECTION.KEY=VALUE')
    p.add_argument('--weighed-sched', action='store_true',
                   help='run each scheduling loop level on Tachyon in four '
                        'turns, alternately without and with the '
                        '--tachyon-weigher weighers (stored for their '
                        'turns only), and compare claims/s and 409s')
    p.add_argument('--telemetry', action='store_true',
                   help='run the candidate workloads on Tachyon again with '
                        'three weighers over two metrics that it collects '
                        'from a Prometheus the bench runs (see '
                        'bench/telemetry.py)')
    p.add_argument('--feed', action='store_true',
                   help='measure the flat candidate request under '
                        '--feed-events provider changes per second, without '
                        'and with --feed-subscribers long-polling the '
                        'change feed (see bench/feed.py)')
    p.add_argument('--feed-subscribers', type=int, default=1000)
    p.add_argument('--feed-stalled', type=int, default=100,
                   help='of --feed-subscribers, streams opened and never '
                        'read (hung controllers)')
    p.add_argument('--feed-everything', type=int, default=5,
                   help='of --feed-subscribers, streams following the '
                        'whole feed (the others each follow one host)')
    p.add_argument('--feed-capacity', type=int, default=0,
                   help='connect idle streams to tachyon-feed up to this '
                        'many, --feed-step at a time, recording its memory '
                        '(0: not run)')
    p.add_argument('--feed-step', type=int, default=1000)
    p.add_argument('--feed-pin', action='store_true',
                   help='--feed: pin the API, its engine and the measuring '
                        'process to CPU 0, the feed server, its replica, '
                        'the writers and the subscribers to CPU 1 (every '
                        'thread, as taskset -a): isolation as a 2-core '
                        'machine can show it')
    p.add_argument('--feed-mode', choices=('sse', 'poll'), default='sse',
                   help='how --feed subscribers follow: a Server-Sent '
                        'Events stream each (default) or long polls')
    p.add_argument('--import', dest='import_placement', action='store_true',
                   help='after loading, time tachyon-manage db import '
                        '--verify of the loaded Placement database into a '
                        'fresh graph (needs --services with placement)')
    p.add_argument('--backup', action='store_true',
                   help='after loading, time tachyon-manage db backup '
                        'while claims go on (their latency beside claims '
                        'alone) and db restore into an empty graph (see '
                        'bench/backup.py)')
    p.add_argument('--feed-nice', type=int, default=0,
                   help='niceness of the --feed server (on a machine '
                        'shared with the API, the README recommends '
                        'running the feed server below it)')
    p.add_argument('--feed-subscriber-nice', type=int, default=0,
                   help='niceness of the --feed subscribers (they stand '
                        'for clients on other machines; default 0)')
    p.add_argument('--feed-turns', type=int, default=8,
                   help='alternating turns without and with subscribers, '
                        'a multiple of 4 (default 8)')
    p.add_argument('--feed-events', type=int, default=1000,
                   help='provider changes per second during --feed '
                        '(default 1000)')
    p.add_argument('--telemetry-refresh', type=int, default=10,
                   help="Tachyon's [telemetry] refresh_interval with "
                        '--telemetry (default 10 s)')
    p.add_argument('--mariadb-buffer-pool', default='256M')
    p.add_argument('--tachyon-python', default=None,
                   help='interpreter that can import tachyon_placement '
                        '(default: this one if it can, else a venv in '
                        'bench/.work)')
    p.add_argument('--timeout', type=float, default=None,
                   help='stop everything after this many seconds (default '
                        '3600 + 0.6 s per host)')
    p.add_argument('--output', default=None,
                   help='results file (default bench/results/<time>.json)')
    args = p.parse_args(argv)
    args.services = [s.strip() for s in args.services.split(',')
                     if s.strip()]
    for s in args.services:
        if s not in ('placement', 'tachyon'):
            p.error('unknown service %r' % s)
    names = [w.name for w in wl.read_workloads(cloud_mod.build_cloud(1))]
    if args.workloads is None:
        args.workloads = names
    elif args.workloads == 'none':
        args.workloads = []
    else:
        args.workloads = [w.strip() for w in args.workloads.split(',')]
        for w in args.workloads:
            if w not in names:
                p.error('unknown workload %r (known: %s)'
                        % (w, ', '.join(names)))
    if args.concurrency == 'none':
        args.concurrency = []
    else:
        args.concurrency = [int(c) for c in args.concurrency.split(',')]
    if args.hosts < 8:
        p.error('--hosts must be at least 8')
    if args.weighed_sched and not args.tachyon_weigher:
        p.error('--weighed-sched compares with the --tachyon-weigher '
                'weighers: name at least one')
    if args.timeout is None:
        args.timeout = 3600 + 0.6 * args.hosts
    return args


def machine_info():
    info = {'cpus': os.cpu_count(), 'python': sys.version.split()[0],
            'platform': platform.platform()}
    try:
        with open('/proc/meminfo') as f:
            info['mem_total'] = f.readline().split(':')[1].strip()
    except OSError:
        pass
    try:
        rev = subprocess.run(['git', '-C', svcs.REPO_DIR, 'describe',
                              '--always', '--dirty'], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        info['tachyon_git'] = rev or None
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def _note_cpu(entry, stats, cpu_used):
    """Put in a scheduling loop's ``entry`` the CPU each service's
    processes (API and engine) spent per claim, and how busy the machine
    was (the clients share it): the services took turns, so each one's
    processes worked only in its own turns."""
    if cpu_used is None:
        return
    used, share = cpu_used
    for name, st in stats.items():
        if st.claims and name in used:
            entry[name]['cpu_ms_per_claim'] = round(
                1000.0 * used[name] / st.claims, 2)
    if share is not None:
        entry['machine_busy_percent'] = round(100.0 * share, 1)


def _say(msg):
    svcs.log(msg)


def store_weighers(client, specs):
    """PUT each NAME=JSON of ``specs`` to /tachyon/weighers/NAME; the
    stored documents."""
    stored = {}
    for spec in specs:
        name, _, body = spec.partition('=')
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise SystemExit('--tachyon-weigher %s: bad JSON: %s'
                             % (name, exc))
        response = client.request('PUT', '/tachyon/weighers/%s' % name,
                                  document)
        if response.status != 201:
            raise SystemExit('--tachyon-weigher %s: %s %s' % (
                name, response.status, response.body[:500]))
        stored[name] = response.json()
        _say('tachyon: weigher %s stored' % name)
    return stored


# Most throwaway loads of the Neo4j warm-up (see warm_up).
WARMUP_ROUNDS = 5


def warm_up(svc, args):
    """Bring a fresh Neo4j JVM to its steady state before measuring.

    A JVM compiles its hot code while it runs: on this 2-core machine the
    C2 compiler threads of a fresh Neo4j take more CPU than its Bolt
    workers at first, and loading 300 hosts took 31-35 s on a fresh JVM,
    16-20 s on the next 300, then 11-13 s from the third on.  A production
    Neo4j runs for weeks, so the bench measures the steady state (as JMH
    does): it loads throwaway clouds (other seeds, other names) until a
    load is less than 10 %% faster than the one before (at most
    WARMUP_ROUNDS), drives their reads and a scheduling loop, empties the
    database and restarts gunicorn.  The cold load is reported too.
    """
    clients = {svc.name: http.Client(svc.name, '127.0.0.1', svc.port)}
    start = time.perf_counter()
    loads = []
    for round_no in range(WARMUP_ROUNDS):
        cloud = cloud_mod.build_cloud(args.neo4j_warmup_hosts,
                                      args.seed + 1 + round_no)
        for provider in cloud.providers():
            provider.name = 'warmup%d-%s' % (round_no, provider.name)
        load = cloud_mod.load_cloud(clients[svc.name], cloud,
                                    args.load_workers)
        loads.append(load.get('total_seconds'))
        _say('%s: warm-up load %d (%d hosts): %ss' % (
            svc.label, round_no + 1, args.neo4j_warmup_hosts, loads[-1]))
        if len(loads) > 1 and loads[-1] > 0.9 * loads[-2]:
            break
    for w in wl.read_workloads(cloud):
        wl.run_read(w, clients, 10, 30)
    wl.run_sched(clients, 16, 10, args.slice_seconds, cloud,
                 seed=args.seed + 1, backoff=args.backoff_scale,
                 processes=args.sched_clients == 'processes')
    seconds = time.perf_counter() - start
    svc.restart_empty()
    _say('%s: warm-up took %.1fs; database emptied, gunicorn restarted'
         % (svc.label, seconds))
    return {'hosts': args.neo4j_warmup_hosts, 'seconds': round(seconds, 1),
            'load_seconds': loads}


def import_placement(args, placement_svc):
    """tachyon-manage db import --verify of the loaded Placement's MariaDB
    into a fresh embedded graph of its own; its time and outcome."""
    python = svcs.tachyon_python(args.tachyon_python)
    workdir = os.path.join(svcs.WORK_DIR, 'import')
    shutil.rmtree(workdir, ignore_errors=True)
    conf_path = os.path.join(workdir, 'placement.conf')
    svcs.write_conf(conf_path, {'graph': {'data_dir': os.path.join(
        workdir, 'graph')}})
    _say('import: tachyon-manage db import --verify of Placement\'s '
         'database into a fresh graph')
    t0 = time.perf_counter()
    done = subprocess.run(
        [python, '-m', 'tachyon_placement.cmd.manage', '--config-file',
         conf_path, 'db', 'import', '--from', placement_svc.db.url,
         '--verify', '--no-progress'], capture_output=True, text=True,
        cwd=workdir)
    seconds = round(time.perf_counter() - t0, 1)
    with open(os.path.join(svcs.LOG_DIR, 'import.log'), 'w') as log:
        log.write(done.stdout + done.stderr)
    lines = done.stdout.strip().splitlines()
    _say('import: exit %d in %ss; %s' % (done.returncode, seconds,
                                         lines[-1] if lines else ''))
    return {'seconds': seconds, 'returncode': done.returncode,
            'verified': done.returncode == 0, 'output': lines[-12:]}


def run(args, results, started, sampler_box):
    t0 = time.perf_counter()
    cloud = cloud_mod.build_cloud(args.hosts, args.seed, args.vms_per_host)
    results['cloud'] = cloud.summary()
    results['cloud']['build_seconds'] = round(time.perf_counter() - t0, 2)
    _say('cloud: %(hosts)d hosts, %(providers)d providers, %(consumers)d '
         'consumers, %(allocation_rows)d allocation rows' % results['cloud'])

    # -- setup ---------------------------------------------------------------
    services = []
    if 'placement' in args.services:
        py = svcs.placement_python(sys.executable)
        services.append(svcs.PlacementService(
            py, args.workers, args.threads, args.conf + args.placement_conf,
            args.mariadb_buffer_pool))
    telemetry_conf = []
    if 'tachyon' in args.services:
        py = svcs.tachyon_python(args.tachyon_python)
        if args.telemetry:
            feed = telemetry.Telemetry(cloud, py, args.telemetry_refresh)
            started.append(feed)
            feed.start()
            telemetry_conf = feed.conf()
        services.append(svcs.TachyonService(
            py, args.workers, args.threads,
            args.conf + telemetry_conf + args.tachyon_conf,
            engine=args.engine, neo4j_heap=args.neo4j_heap,
            neo4j_pagecache=args.neo4j_pagecache))
    for svc in services:
        started.append(svc)
        svc.start()
        results['services'][svc.name] = dict(
            label=svc.label, port=svc.port, python=svc.python,
            **svc.describe())
        _say('%s: listening on 127.0.0.1:%d' % (svc.label, svc.port))
        if getattr(svc, 'neo4j', None) and args.neo4j_warmup_hosts:
            results['warmup'] = warm_up(svc, args)
            results['services'][svc.name]['port'] = svc.port
    for svc in services:
        results['services'][svc.name]['packages'] = svcs.pip_freeze(
            svc.python)
    sampler = svcs.RssSampler(services)
    sampler_box.append(sampler)
    sampler.start()
    clients = {svc.name: http.Client(svc.name, '127.0.0.1', svc.port)
               for svc in services}

    # -- load ----------------------------------------------------------------
    sampler.set_phase('load')
    for svc in services:
        _say('%s: loading the cloud' % svc.label)
        try:
            res = cloud_mod.load_cloud(clients[svc.name], cloud,
                                       args.load_workers, progress=_say)
        except cloud_mod.LoadError as e:
            res = {'error': str(e)}
        res['rss_peak_mib'] = sampler.peak_mib(svc.name, 'load')
        results['load'][svc.name] = res
        _say('%s: loaded in %ss' % (svc.label, res.get('total_seconds')))
    loaded = {n: c for n, c in clients.items()
              if 'error' not in results['load'][n]}
    if ('tachyon' in loaded and args.tachyon_weigher
            and not args.weighed_sched):
        results['weighers'] = store_weighers(loaded['tachyon'],
                                             args.tachyon_weigher)

    def record(name, description, stats, kind):
        sampler.sample()
        entry = {'description': description}
        for n, st in stats.items():
            entry[n] = report.summarize(st, kind,
                                        sampler.peak_mib(n, name))
        entry['ratio'] = report.ratios(entry)
        results['workloads'][name] = entry
        return entry

    # -- tachyon-manage db import of Placement's database ------------------
    if args.import_placement and 'placement' in loaded:
        placement_svc = next(svc for svc in services
                             if svc.name == 'placement')
        results['import'] = import_placement(args, placement_svc)

    # -- tachyon-manage db backup and restore -----------------------------
    if args.backup and 'tachyon' in loaded:
        tachyon_svc = next(svc for svc in services if svc.name == 'tachyon')
        results['backup'] = backup_bench.run(
            loaded['tachyon'], tachyon_svc, cloud, args, _say)

    # -- every server worker warm -------------------------------------------
    if loaded:
        urls = [w.url for w in wl.read_workloads(cloud)
                if w.name in args.workloads]
        if args.concurrency:
            urls.append(http.with_query('/allocation_candidates', wl.FLAT))
        connections, rounds = args.workers * args.threads, 2
        requests = rounds * len(urls) * connections
        _say('warming every worker: %d requests over %d connections at '
             'once' % (requests, connections))
        # A phase of its own: as many requests at once as the server has
        # threads, the largest lists among them, is the memory's test.
        sampler.set_phase('warm-up')
        failed = wl.warm_workers(loaded, urls, connections, rounds)
        sampler.sample()
        results['warm_workers'] = {
            'requests': requests, 'connections': connections,
            'rss_peak_mib': {n: sampler.peak_mib(n, 'warm-up')
                             for n in loaded}}
        if failed:
            _say('  not 2xx while warming: %s' % failed)

    # -- read workloads ------------------------------------------------------
    for w in wl.read_workloads(cloud):
        if w.name not in args.workloads or not loaded:
            continue
        _say('workload %s: %s' % (w.name, w.description))
        sampler.set_phase(w.name)
        stats = wl.run_read(w, loaded, args.requests, args.read_seconds)
        entry = record(w.name, '%s: GET %s' % (w.description, w.url),
                       stats, 'read')
        entry['comparison'] = wl.compare_results(
            w, {n: st.first_body for n, st in stats.items()}, cloud)
        _say('  ' + '; '.join(
            '%s p50 %s ms, %d errors' % (
                n, (entry[n]['latency'] or {}).get('p50_ms'),
                entry[n]['errors']) for n in stats))

    # -- the change feed under load -------------------------------------------
    if args.feed and 'tachyon' in loaded:
        tachyon_svc = next(s for s in services if s.name == 'tachyon')
        feed_bench.run(loaded['tachyon'], tachyon_svc, cloud, args, record,
                       started, _say)
    if args.feed_capacity and 'tachyon' in loaded:
        tachyon_svc = next(s for s in services if s.name == 'tachyon')
        results['feed_capacity'] = feed_bench.run_capacity(
            loaded['tachyon'], tachyon_svc, args, record, started, _say)

    # -- the candidate workloads again, weighed by telemetry -----------------
    if telemetry_conf and 'tachyon' in loaded:
        weigh_reads(args, cloud, loaded['tachyon'], results, sampler, record)

    # -- scheduling loop -----------------------------------------------------
    touched = {n: set() for n in loaded}
    if args.weighed_sched and 'tachyon' in loaded:
        weigh_sched(args, cloud, loaded['tachyon'], results, sampler, record,
                    touched['tachyon'])
    for c in args.concurrency:
        if not loaded or args.weighed_sched:
            break
        name = 'sched_c%d' % c
        _say('workload %s: scheduling loop, %d clients, %ss per service'
             % (name, c, args.sched_seconds))
        sampler.set_phase(name)
        stats = wl.run_sched(loaded, c, args.sched_seconds,
                             args.slice_seconds, cloud, seed=args.seed,
                             backoff=args.backoff_scale,
                             processes=args.sched_clients == 'processes')
        for n, st in stats.items():
            touched[n] |= st.touched
        entry = record(name, 'scheduling loop, %d concurrent clients: GET '
                       '/allocation_candidates %s, PUT /allocations on the '
                       'first candidate, DELETE' % (c, SCHED_QUERY),
                       stats, 'sched')
        _note_cpu(entry, stats, sampler.cpu_used(name))
        _say('  ' + '; '.join('%s %s claims/s, %d errors, %s ms of service '
                              'CPU per claim' % (
                                  n, entry[n]['claims_per_s'],
                                  entry[n]['errors'],
                                  entry[n].get('cpu_ms_per_claim'))
                              for n in stats)
             + '; machine %s %% busy' % entry.get('machine_busy_percent'))

    # -- fill race -----------------------------------------------------------
    if args.race_concurrency and loaded:
        name = 'race_c%d' % args.race_concurrency
        _say('workload %s: filling the race aggregate (%d hosts)'
             % (name, len(cloud.race_hosts())))
        sampler.set_phase(name)
        stats = {}
        for n, cl in loaded.items():
            stats[n] = wl.run_race(cl, cloud, args.race_concurrency,
                                   args.race_seconds, seed=args.seed,
                                   backoff=args.backoff_scale)
            touched[n] |= stats[n].touched
        entry = record(name, 'fill race, %d clients claim and keep %s on '
                       'the race aggregate until no candidate is left'
                       % (args.race_concurrency, SCHED_QUERY), stats,
                       'sched')
        _say('  ' + '; '.join('%s %d/%d claims, %d errors' % (
            n, st.claims, st.expected, st.error_count)
            for n, st in stats.items()))

    # -- usage check ---------------------------------------------------------
    sampler.set_phase('check')
    for n, cl in loaded.items():
        uuids, exact = wl.providers_to_check(
            cloud, touched[n], args.check_sample, args.seed,
            args.full_check)
        _say('%s: checking the usages of %d providers'
             % (results['services'][n]['label'], len(uuids)))
        results['checks'][n] = wl.check_usages(cl, cloud, uuids, exact)


def weigh_reads(args, cloud, client, results, sampler, record):
    """Store bench/telemetry.py's metrics and weighers, run the candidate
    workloads on Tachyon alone, compare each p50 with the same workload's
    without weighers, remove them."""
    seconds = telemetry.store(client, 'resources=' + wl.FLAT['resources'])
    results['telemetry'] = {'metrics': telemetry.METRICS,
                            'weighers': telemetry.WEIGHERS,
                            'refresh_interval': args.telemetry_refresh,
                            'first_values_seconds': seconds}
    _say('tachyon: %d metrics and %d weighers stored, first values after '
         '%ss' % (len(telemetry.METRICS), len(telemetry.WEIGHERS), seconds))
    for w in wl.read_workloads(cloud):
        if w.name not in args.workloads or w.kind != 'candidates':
            continue
        name = w.name + '+weighers'
        _say('workload %s: %s, weighed' % (name, w.description))
        sampler.set_phase(name)
        stats = wl.run_read(w, {'tachyon': client}, args.requests,
                            args.read_seconds)
        entry = record(name, '%s: GET %s, ordered by %s' % (
            w.description, w.url, ', '.join(telemetry.WEIGHERS)),
            stats, 'read')
        plain = results['workloads'].get(w.name, {}).get('tachyon')
        if plain:
            entry['versus'] = dict({
                q: report.ratio(report.latency(entry['tachyon'], q),
                                report.latency(plain, q))
                for q in ('p50_ms', 'p95_ms', 'p99_ms')},
                base='same workload without weighers')
        _say('  tachyon p50 %s ms (%s without weighers)' % (
            report.latency(entry['tachyon'], 'p50_ms'),
            report.latency(plain or {}, 'p50_ms')))
    telemetry.remove(client)


# Turns of the weighed scheduling loop: without, with, with, without.
WEIGHED_SCHED_TURNS = (False, True, True, False)


def weigh_sched(args, cloud, client, results, sampler, record, touched):
    """The scheduling loop on Tachyon at each level, in turns without and
    with the --tachyon-weigher weighers (so that the machine's drift
    weighs on both alike); records sched_cN and sched_cN+weighers, the
    latter with its claims/s and latency over the former's."""
    for c in args.concurrency:
        name = 'sched_c%d' % c
        _say('workload %s: scheduling loop, %d clients, %ss without and '
             '%ss with weighers, in turns'
             % (name, c, args.sched_seconds, args.sched_seconds))
        sampler.set_phase(name)
        merged = {False: wl.Stats(), True: wl.Stats()}
        turn_seconds = args.sched_seconds / (len(WEIGHED_SCHED_TURNS) / 2)
        for turn, weighed in enumerate(WEIGHED_SCHED_TURNS):
            if weighed:
                stored = store_weighers(client, args.tachyon_weigher)
                results['weighers'] = stored
            try:
                st = wl.run_sched({'tachyon': client}, c, turn_seconds,
                                  args.slice_seconds, cloud,
                                  seed=args.seed + turn,
                                  backoff=args.backoff_scale,
                                  processes=args.sched_clients == (
                                      'processes'))['tachyon']
            finally:
                if weighed:
                    for weigher in stored:
                        client.request('DELETE',
                                       '/tachyon/weighers/%s' % weigher)
            merged[weighed].merge(st)
            merged[weighed].wall += st.wall
            touched |= st.touched
        what = ('scheduling loop, %d concurrent clients: GET '
                '/allocation_candidates %s, PUT /allocations on the first '
                'candidate, DELETE' % (c, SCHED_QUERY))
        plain = record(name, what, {'tachyon': merged[False]}, 'sched')
        entry = record(name + '+weighers', what + ', weighers: ' + ', '.join(
            results.get('weighers', ())), {'tachyon': merged[True]}, 'sched')
        entry['versus'] = dict(
            {q: report.ratio(report.latency(entry['tachyon'], q),
                             report.latency(plain['tachyon'], q))
             for q in ('p50_ms', 'p95_ms', 'p99_ms')},
            claims_per_s=report.ratio(entry['tachyon']['claims_per_s'],
                                      plain['tachyon']['claims_per_s']),
            base='same loop without weighers')
        _say('  tachyon %s claims/s, %s %% 409 without weighers; %s claims/s,'
             ' %s %% 409 with' % (
                 plain['tachyon']['claims_per_s'],
                 _percent(plain['tachyon'].get('conflict_rate')),
                 entry['tachyon']['claims_per_s'],
                 _percent(entry['tachyon'].get('conflict_rate'))))


def _percent(rate):
    return None if rate is None else round(rate * 100.0, 1)


def main(argv=None):
    args = parse_args(argv)
    started_at = datetime.datetime.now().strftime('%Y-%m-%dT%H:%M:%S')
    results = {
        'started': started_at,
        'config': {k: v for k, v in vars(args).items()},
        'machine': machine_info(),
        'cloud': {}, 'services': {}, 'load': {}, 'workloads': {},
        'checks': {}, 'error': None,
    }
    started, sampler_box = [], []

    def on_signal(signum, frame):
        raise Interrupted('signal %s' % signal.Signals(signum).name)

    def on_alarm(signum, frame):
        raise Interrupted('time limit (--timeout %ds) reached'
                          % args.timeout)

    # Also when started with SIGINT ignored (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    rc = 0
    try:
        with svcs.work_dir_lock():
            svcs.reap_stale()
            signal.alarm(int(args.timeout))
            try:
                run(args, results, started, sampler_box)
            finally:
                signal.alarm(0)
                wl.STOP.set()
                _cleanup(started, sampler_box, results)
    except (KeyboardInterrupt, Interrupted) as e:
        results['error'] = 'interrupted: %s' % (str(e) or 'Ctrl-C')
        rc = 130
    except svcs.SetupError as e:
        results['error'] = 'setup failed: %s' % e
        rc = 2
    except Exception as e:
        import traceback
        traceback.print_exc()
        results['error'] = '%s: %s' % (type(e).__name__, e)
        rc = 1
    results['finished'] = datetime.datetime.now().strftime(
        '%Y-%m-%dT%H:%M:%S')
    if results['cloud']:
        print(report.render(results))
        path = report.write(results, args.output)
        print('Results: %s' % os.path.relpath(path))
    elif results['error']:
        print(results['error'], file=sys.stderr)
    return rc


def _cleanup(started, sampler_box, results):
    """Stop everything we started; a second Ctrl-C does not interrupt."""
    def patience(signum, frame):
        svcs.log('stopping the services, please wait')
    old = {s: signal.signal(s, patience)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for sampler in sampler_box:
            sampler.stop()
            for svc in started:
                entry = results['services'].get(svc.name)
                if entry is not None:
                    entry['rss_peak_mib'] = sampler.peak_mib(svc.name)
                    entry['rss_peak_parts'] = sampler.peak_parts_mib(
                        svc.name)
        for svc in reversed(started):
            try:
                svc.stop()
            except Exception as e:     # keep stopping the others
                svcs.log('stopping %s failed: %s' % (svc.name, e))
        svcs.log('all services stopped')
    finally:
        for s, h in old.items():
            signal.signal(s, h)


if __name__ == '__main__':
    sys.exit(main())
