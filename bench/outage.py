"""How long writes stop when a FalkorDB primary fails under Sentinel.

    python -m bench.outage [--runs N] [--faults killed,paused,twice]

For each fault and run: a primary, two replicas and three sentinels on
loopback (the HA tests' sentinel_cluster.py: down-after 1 s), two Tachyon
API processes (``replica_acks = 1``), four writers claiming and deleting
through both, then the fault:

- ``killed``: SIGKILL of the primary;
- ``paused``: SIGSTOP of the primary, SIGCONT once another is promoted;
- ``twice``: SIGKILL of the primary, the killed server started again as a
  replica, then, once it caught up, SIGKILL of the new primary.

Printed per fault (the median and the worst of the runs): seconds until the
sentinels promoted another server, seconds from the fault to the first
acknowledged write sent after it (the outage writers see), the longest
gap between two acknowledged writes, and the 503s answered.  The figures
go to doc/source/admin/ha.rst and the bench results page.
"""
import argparse
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid

from tachyon_placement.tests.functional import sentinel_cluster
from tachyon_placement.tests.functional import served

WRITERS = 4


class Writes:
    """Acknowledged writes (when answered) and 503s, for the writers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = []             # (sent, answered)
        self.unavailable = 0
        self.stop = threading.Event()

    def writer(self, api, provider):
        while not self.stop.is_set():
            consumer = str(uuid.uuid4())
            sent = time.monotonic()
            try:
                status, _ = served.json_request(
                    api.url, 'PUT', '/allocations/%s' % consumer, {
                        'allocations': {provider: {'resources': {'VCPU': 1}}},
                        'project_id': str(uuid.UUID(int=1)),
                        'user_id': str(uuid.UUID(int=2)),
                        'consumer_generation': None,
                        'consumer_type': 'INSTANCE'}, '1.39', timeout=30)
                if status == 204:
                    status, _ = served.json_request(
                        api.url, 'DELETE', '/allocations/%s' % consumer,
                        None, '1.39', timeout=30)
            except OSError:
                status = None
            with self.lock:
                if status == 204:
                    self.acked.append((sent, time.monotonic()))
                elif status == 503:
                    self.unavailable += 1

    def outage(self, fault_at):
        """(first acknowledged write sent after fault_at, longest gap)."""
        with self.lock:
            acked = sorted(self.acked, key=lambda write: write[1])
        after = [answered - fault_at for sent, answered in acked
                 if sent > fault_at]
        gaps = [later[1] - earlier[1]
                for earlier, later in zip(acked, acked[1:])]
        return (min(after) if after else float('inf'),
                max(gaps) if gaps else float('inf'))


def one_run(workdir, fault):
    cluster = sentinel_cluster.Cluster(workdir + '/cluster').start()
    apis = []
    writes = Writes()
    threads = []
    try:
        conf = 'connection = %s\nreplica_acks = 1\n' % cluster.uri
        for number in range(2):
            apis.append(served.ServedPlacement(
                '%s/api-%d' % (workdir, number), extra_conf=conf).start())
        provider = str(uuid.uuid4())
        apis[0].request('POST', '/resource_providers',
                        {'name': 'outage', 'uuid': provider})
        apis[0].request('PUT', '/resource_providers/%s/inventories'
                        % provider, {'resource_provider_generation': 0,
                                     'inventories': {'VCPU': {
                                         'total': 1000}}})
        threads = [threading.Thread(target=writes.writer,
                                    args=(apis[number % 2], provider))
                   for number in range(WRITERS)]
        for thread in threads:
            thread.start()
        time.sleep(3)
        old = cluster.primary()
        if fault == 'twice':
            old.kill()
            first, _ = cluster.wait_new_primary(old)
            cluster.restart(old)
            cluster.wait_replicas(len(cluster.servers) - 1)
            # Every sentinel names the new primary before the second fault.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(
                    sentinel.primary() != first.port
                    for sentinel in cluster.sentinels):
                time.sleep(0.1)
            time.sleep(2)
            old = first
        fault_at = time.monotonic()
        if fault == 'paused':
            old.process.send_signal(signal.SIGSTOP)
        else:
            old.kill()
        _new, promoted = cluster.wait_new_primary(old)
        if fault == 'paused':
            old.process.send_signal(signal.SIGCONT)
        # Until a write sent after the fault is acknowledged (at most a
        # minute), then a little more for the longest gap.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                writes.outage(fault_at)[0] == float('inf')):
            time.sleep(0.2)
        time.sleep(3)
        writes.stop.set()
        for thread in threads:
            thread.join(60)
        back, gap = writes.outage(fault_at)
        return promoted, back, gap, writes.unavailable
    finally:
        writes.stop.set()
        for api in apis:
            api.stop()
        cluster.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--faults', default='killed,paused,twice')
    args = parser.parse_args(argv)
    print('%-7s %5s  %-22s %-22s %-22s %s' % (
        'fault', 'runs', 'promoted (s) med/max', 'writes back (s)',
        'longest gap (s)', '503s med'))
    for fault in args.faults.split(','):
        runs = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(
                    prefix='tachyon-bench-outage-') as workdir:
                runs.append(one_run(workdir, fault))
        columns = list(zip(*runs))
        print('%-7s %5d  %-22s %-22s %-22s %d' % (
            fault, len(runs),
            *('%.1f / %.1f' % (statistics.median(column), max(column))
              for column in columns[:3]),
            statistics.median(columns[3])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
