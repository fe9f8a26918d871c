"""How fast Tachyon comes back after a restart, on a loaded cloud.

    python -m bench.restart --hosts 10000
    python -m bench.restart --hosts 10000 --reuse     # keep the loaded data

Loads the seeded cloud into Tachyon (gunicorn, embedded FalkorDB), adds a
write history (Nova-style claims and deletes), stops the service, then
restarts it ``--restarts`` times and measures from the launch of gunicorn:
when the service first answers (GET / 200) and when the first
GET /allocation_candidates (the bench's flat request) answers 200.  It
also reports the append-only file's size before each restart and the
CRITICAL lines the engine logged during the restarts.  Prints a table and
writes bench/results/restart-<time>.json.

``--reuse`` skips the load and the history when bench/.work/restart holds
a cloud loaded by an earlier run with the same --hosts and --seed.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import sys
import time
import urllib.request

from bench import client as http
from bench import cloud as cloud_mod
from bench import services as svcs
from bench import workloads as wl

RESULTS_DIR = os.path.join(svcs.BENCH_DIR, 'results')


class KeptTachyonService(svcs.TachyonService):
    """TachyonService whose data survives a stop; ``fresh`` wipes it."""

    def __init__(self, python, workers, threads, conf_overrides=()):
        super().__init__(python, workers, threads, conf_overrides)
        self.dir = os.path.join(svcs.WORK_DIR, 'restart')
        self.data_dir = os.path.join(self.dir, 'graph')
        self.conf_path = os.path.join(self.dir, 'etc', 'placement.conf')
        self.launched = None

    def prepare(self, fresh):
        if fresh and os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        svcs.write_conf(self.conf_path, svcs.merge_conf({
            'DEFAULT': {'debug': 'False'},
            'api': {'auth_strategy': 'noauth2'},
            'graph': {'data_dir': self.data_dir},
        }, self.conf_overrides))
        if fresh:
            svcs.run([self.python, '-m', 'tachyon_placement.cmd.manage',
                      '--config-file', self.conf_path, 'db', 'sync'],
                     'tachyon-db-sync.log', timeout=600, cwd=svcs.WORK_DIR)

    def launch(self):
        """Start gunicorn without waiting for it; returns the launch
        time (time.monotonic)."""
        env = dict(os.environ, TACHYON_CONFIG_FILE=self.conf_path,
                   PYTHONDONTWRITEBYTECODE='1')
        env.pop('OS_PLACEMENT_CONFIG_DIR', None)
        self.gunicorn = svcs.Gunicorn('tachyon-gunicorn', self.python,
                                      svcs.TACHYON_APP, self.workers,
                                      self.threads, env, self.dir)
        self.gunicorn.port = svcs.free_port()
        self.launched = time.monotonic()
        self.gunicorn.proc = svcs.Proc(self.gunicorn.name,
                                       self.gunicorn.argv(), env=env,
                                       cwd=self.dir)
        return self.launched

    def start(self):
        self.launch()
        wait_for(self, '/', 180)
        self._record_server()

    def aof_bytes(self):
        total = 0
        directory = os.path.join(self.data_dir, 'appendonlydir')
        for name in os.listdir(directory) if os.path.isdir(directory) else ():
            total += os.path.getsize(os.path.join(directory, name))
        return total

    def log_lines(self):
        path = os.path.join(self.data_dir, 'falkordb.log')
        try:
            with open(path, 'rb') as log:
                return log.read().decode('utf-8', 'replace').splitlines()
        except OSError:
            return []


def wait_for(service, path, timeout):
    """Seconds from the launch until ``path`` answers 200."""
    url = 'http://127.0.0.1:%d%s' % (service.port, path)
    request = urllib.request.Request(url, headers={
        'x-auth-token': 'admin', 'accept': 'application/json',
        'openstack-api-version': 'placement %s' % http.MICROVERSION})
    deadline = service.launched + timeout
    while True:
        if not service.gunicorn.proc.alive():
            raise svcs.SetupError('gunicorn exited; %s ends with:\n%s' % (
                service.gunicorn.proc.log_path,
                svcs.tail(service.gunicorn.proc.log_path)))
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                if answer.status == 200:
                    answer.read()
                    return time.monotonic() - service.launched
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise svcs.SetupError('%s did not answer within %ds' % (
                url, timeout))
        time.sleep(0.05)


def write_history(client, cloud, claims, seed):
    """``claims`` Nova-style claims, half of them deleted again."""
    rng = random.Random(seed)
    stats = wl.Stats()
    for number in range(claims):
        wl.claim(client, wl.FLAT, cloud, rng, stats, keep=number % 2 == 0)
    return {'claims': stats.claims, 'errors': stats.error_count}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m bench.restart', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--threads', type=int, default=4)
    parser.add_argument('--load-workers', type=int, default=16)
    parser.add_argument('--history', type=int, default=2000,
                        help='claims written after the load (default 2000)')
    parser.add_argument('--restarts', type=int, default=3)
    parser.add_argument('--reuse', action='store_true')
    parser.add_argument('--tachyon-conf', action='append', default=[],
                        metavar='SECTION.KEY=VALUE')
    parser.add_argument('--output', default=None)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    python = svcs.tachyon_python(None)
    service = KeptTachyonService(python, args.workers, args.threads,
                                 args.tachyon_conf)
    stamp_path = os.path.join(service.dir, 'loaded.json')
    wanted = {'hosts': args.hosts, 'seed': args.seed}
    loaded = None
    if args.reuse and os.path.exists(stamp_path):
        with open(stamp_path) as stamp:
            loaded = json.load(stamp)
        if loaded.get('cloud') != wanted:
            loaded = None
    results = {'hosts': args.hosts, 'seed': args.seed,
               'started': datetime.datetime.now().isoformat(
                   timespec='seconds'), 'restarts': []}
    cloud = cloud_mod.build_cloud(args.hosts, args.seed)
    try:
        if loaded is None:
            service.prepare(fresh=True)
            service.start()
            client = http.Client('tachyon', '127.0.0.1', service.port)
            svcs.log('restart: loading %d hosts' % args.hosts)
            load = cloud_mod.load_cloud(client, cloud, args.load_workers,
                                        progress=svcs.log)
            svcs.log('restart: %d claims of write history' % args.history)
            history = write_history(client, cloud, args.history, args.seed)
            service.stop()
            loaded = {'cloud': wanted, 'load': load, 'history': history}
            with open(stamp_path, 'w') as stamp:
                json.dump(loaded, stamp)
        else:
            service.prepare(fresh=False)
        results['load'] = loaded
        candidates_path = http.with_query('/allocation_candidates',
                                          wl.FLAT)
        for number in range(args.restarts):
            aof = service.aof_bytes()
            log_start = len(service.log_lines())
            service.launch()
            answering = wait_for(service, '/', 600)
            candidates = wait_for(service, candidates_path, 600)
            service._record_server()
            time.sleep(2)
            critical = [line for line in service.log_lines()[log_start:]
                        if 'CRITICAL' in line]
            run = {'aof_mib_before': round(aof / 2 ** 20, 1),
                   'answering_s': round(answering, 2),
                   'first_candidates_s': round(candidates, 2),
                   'critical_lines': len(critical),
                   'critical_sample': critical[:3]}
            svcs.log('restart %d: %s' % (number + 1, run))
            results['restarts'].append(run)
            service.stop()
    finally:
        service.stop()
    print('\n| restart | AOF before | answering | first candidates | '
          'CRITICAL lines |')
    print('|---|---|---|---|---|')
    for number, run in enumerate(results['restarts'], 1):
        print('| %d | %.1f MiB | %.2f s | %.2f s | %d |' % (
            number, run['aof_mib_before'], run['answering_s'],
            run['first_candidates_s'], run['critical_lines']))
    os.makedirs(RESULTS_DIR, exist_ok=True)
    output = args.output or os.path.join(
        RESULTS_DIR, 'restart-%s.json' % time.strftime('%Y%m%d-%H%M%S'))
    with open(output, 'w') as out:
        json.dump(results, out, indent=2)
    print('results: %s' % output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
