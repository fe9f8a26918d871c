"""--backup: tachyon-manage db backup of the loaded cloud while the API
serves and claims go on (their PUT /allocations latency beside the same
claims with no backup running), the file's size, db export into an empty
Placement database (SQLite, its tables made by placement-manage db sync),
then db restore of the backup into an empty graph (FalkorDB: a fresh
embedded graph of its own; Neo4j: the bench's server, emptied, Tachyon
stopped meanwhile) and the times."""
import os
import random
import shutil
import subprocess
import threading
import time

from bench import report
from bench import services as svcs
from bench import workloads as wl


def _manage(python, conf_path, *args):
    began = time.perf_counter()
    done = subprocess.run(
        [python, '-m', 'tachyon_placement.cmd.manage', '--config-file',
         conf_path, 'db'] + list(args) + ['--no-progress'],
        capture_output=True, text=True, cwd=svcs.WORK_DIR)
    seconds = round(time.perf_counter() - began, 2)
    if done.returncode:
        raise RuntimeError('db %s: exit %d: %s' % (
            args[0], done.returncode, done.stderr[-2000:]))
    return seconds, done.stdout.strip().splitlines()[-1]


def _placement_manage(python):
    """placement-manage beside ``python`` (the test requirements install
    openstack-placement), else in the bench's Placement venv."""
    beside = os.path.join(os.path.dirname(python), 'placement-manage')
    if os.access(beside, os.X_OK):
        return beside
    return os.path.join(os.path.dirname(svcs.placement_python(python)),
                        'placement-manage')


def _export(python, conf_path, workdir):
    """db export into an empty SQLite Placement database: (seconds, the
    command's last line)."""
    database = os.path.join(workdir, 'placement.sqlite')
    placement_conf = os.path.join(workdir, 'placement-export.conf')
    with open(placement_conf, 'w') as out:
        out.write('[placement_database]\nconnection = sqlite:///%s\n'
                  % database)
    svcs.run([_placement_manage(python), '--config-file', placement_conf,
              'db', 'sync'], 'placement-db-sync.log', timeout=600,
             cwd=workdir)
    return _manage(python, conf_path, 'export', '--to',
                   'sqlite:///%s' % database)


def _claims(client, hosts, cloud, rng, stop):
    """PUT /allocations (one VCPU) and DELETE of it again until ``stop``:
    the latency of each write (a write that waits for a backup may be
    either)."""
    stats = wl.Stats()
    began = time.monotonic()
    while not stop.is_set():
        consumer = '%032x' % rng.getrandbits(128)
        consumer = '-'.join((consumer[:8], consumer[8:12], consumer[12:16],
                             consumer[16:20], consumer[20:]))
        response = client.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {rng.choice(hosts): {'resources': {'VCPU': 1}}},
            'project_id': cloud.projects[0], 'user_id': cloud.users[0],
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        stats.requests += 1
        if response.status != 204:
            stats.error('PUT /allocations', response)
            continue
        stats.latencies.append(response.elapsed)
        response = client.request('DELETE', '/allocations/%s' % consumer)
        stats.requests += 1
        if response.status == 204:
            stats.latencies.append(response.elapsed)
        else:
            stats.error('DELETE /allocations', response)
    stats.wall = time.monotonic() - began
    return stats


def _with_claims(client, hosts, cloud, seed, action):
    """(action's result, claim Stats while it ran)."""
    stop = threading.Event()
    box = {}
    thread = threading.Thread(target=lambda: box.update(stats=_claims(
        client, hosts, cloud, random.Random(seed), stop)), daemon=True)
    thread.start()
    try:
        result = action()
    finally:
        stop.set()
        thread.join(120)
    return result, box['stats']


def run(client, tachyon, cloud, args, say):
    python = tachyon.python
    workdir = os.path.join(svcs.WORK_DIR, 'backup')
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    path = os.path.join(workdir, 'graph.jsonl.gz')
    hosts = [h.root.uuid for h in cloud.hosts
             if not h.race and h.fill < 0.7]
    say('backup: claims alone for 10 s, then with db backup running')
    _none, idle = _with_claims(client, hosts, cloud, args.seed,
                               lambda: time.sleep(10))
    (seconds, said), during = _with_claims(
        client, hosts, cloud, args.seed + 1,
        lambda: _manage(python, tachyon.conf_path, 'backup', path))
    size = os.path.getsize(path)
    say('backup: %ss, %.1f MiB; %s' % (seconds, size / 2 ** 20, said))
    result = {'engine': tachyon.engine, 'backup_seconds': seconds,
              'backup_mib': round(size / 2 ** 20, 2), 'backup_said': said,
              'writes_idle': report.latency_summary(idle.latencies),
              'writes_during_backup': report.latency_summary(
                  during.latencies),
              'write_errors_during_backup': during.error_count,
              'writes_wall_seconds': round(during.wall, 2)}
    seconds, said = _export(python, tachyon.conf_path, workdir)
    say('export: %ss; %s' % (seconds, said))
    result.update(export_seconds=seconds, export_said=said)
    if tachyon.neo4j:
        tachyon.gunicorn.stop()
        svcs.run([python, '-c', svcs._EMPTY_NEO4J, tachyon.neo4j.uri],
                 'tachyon-empty.log', timeout=1200, cwd=svcs.WORK_DIR)
        seconds, said = _manage(python, tachyon.conf_path, 'restore', path)
        tachyon.gunicorn.start()
        # gunicorn listens on a new port: the later phases' client follows.
        client.port = tachyon.gunicorn.port
        client._local = threading.local()
    else:
        conf_path = os.path.join(workdir, 'placement.conf')
        svcs.write_conf(conf_path, {'graph': {'data_dir': os.path.join(
            workdir, 'graph')}})
        seconds, said = _manage(python, conf_path, 'restore', path)
    say('restore: %ss; %s' % (seconds, said))
    result.update(restore_seconds=seconds, restore_said=said)
    return result
