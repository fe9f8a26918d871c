"""No acknowledged write lost when the primary dies: FalkorDB servers
failed over by Redis Sentinel (sentinel_cluster.py), two Tachyon API
processes, a storm of writes, SIGKILL of the primary in the middle.

Every write is recorded with what it was answered: acknowledged (2xx),
refused (4xx: not applied) or unknown (503 during the switch, a lost
connection: applied or not).  Afterwards the new primary's graph must hold
every acknowledged write (or an unknown write made after it), none of the
refused ones, no provider above capacity, usage equal to the allocations
(``tachyon-manage db verify``), and the killed server, started again as a
replica, must hold the same graph (``tachyon-manage db compare``).
"""
import collections
import random
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tachyon_placement.tests.functional import sentinel_cluster
from tachyon_placement.tests.functional import served
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is not None,
    reason='FalkorDB only: Sentinel fails over FalkorDB (Redis) servers; '
           'Neo4j clustering is Enterprise-only')

RACE_PROVIDERS = 6
RACE_VCPU = 10
INVENTORY_PROVIDERS = 4
WRITERS = 8
STORM_BEFORE_KILL = 4.0
STORM_AFTER_BACK = 6.0
UNAVAILABLE = 'tachyon.graph.unavailable'


class Ledger:
    """What each write was answered, in order, per object."""

    def __init__(self):
        self.lock = threading.Lock()
        self.claims = {}            # consumer -> (provider, outcome)
        self.deletes = {}           # consumer -> outcome
        self.providers = {}         # provider -> [(op, outcome)]
        self.inventories = collections.defaultdict(list)  # rp -> [(total,
        #                                                   outcome)]
        self.statuses = collections.Counter()
        self.bad = []               # 5xx other than the documented 503
        self.first_write_after_kill = None
        self.killed_at = None
        self.stale_reads = []

    def outcome(self, status, body, sent=None):
        """What an answer means; ``sent``: when the write was sent (the
        first acknowledged write sent after the kill ends the outage)."""
        with self.lock:
            self.statuses[status] += 1
        if status is None:
            return 'unknown'
        if 200 <= status < 300:
            if sent is not None and self.killed_at is not None and \
                    sent > self.killed_at and \
                    self.first_write_after_kill is None:
                self.first_write_after_kill = time.monotonic()
            return 'acked'
        if status == 503:
            if not _unavailable(status, body):
                self.bad.append((status, body))
            return 'unknown'
        if status >= 500:
            self.bad.append((status, body))
            return 'unknown'
        return 'refused'


def _unavailable(status, body):
    """Whether an answer is the documented 503 of a graph without a
    primary to use (tachyon.graph.unavailable, alone)."""
    codes = [error.get('code') for error in (body or {}).get('errors', [])]
    return status == 503 and codes == [UNAVAILABLE]


def _call(api, method, path, body=None, version='1.39'):
    """(status or None when the connection failed, body)."""
    try:
        return served.json_request(api.url, method, path, body, version,
                                   timeout=30)
    except OSError:
        return None, None


def _storm(apis, ledger, race, inventory_rps, stop, seed):
    rand = random.Random(seed)
    while not stop.is_set():
        api = rand.choice(apis)
        other = apis[1] if api is apis[0] else apis[0]
        kind = rand.random()
        if kind < 0.5:
            consumer = str(uuid.uuid4())
            provider = rand.choice(race)
            sent = time.monotonic()
            status, body = _call(api, 'PUT', '/allocations/%s' % consumer, {
                'allocations': {provider: {'resources': {'VCPU': 1}}},
                'project_id': str(uuid.UUID(int=1)),
                'user_id': str(uuid.UUID(int=2)),
                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
            ledger.claims[consumer] = (provider,
                                       ledger.outcome(status, body, sent))
        elif kind < 0.65:
            acked = [consumer for consumer, (_rp, outcome) in
                     list(ledger.claims.items())
                     if outcome == 'acked' and consumer not in ledger.deletes]
            if not acked:
                continue
            consumer = rand.choice(acked)
            ledger.deletes[consumer] = 'pending'
            sent = time.monotonic()
            status, body = _call(api, 'DELETE', '/allocations/%s' % consumer)
            ledger.deletes[consumer] = ledger.outcome(status, body, sent)
            if ledger.deletes[consumer] == 'acked':
                # Read your writes on the other API process (a paused old
                # primary that resumed must not answer it).
                seen_status, seen = _call(other, 'GET',
                                          '/allocations/%s' % consumer)
                if seen_status == 200 and seen['allocations']:
                    ledger.stale_reads.append((consumer, seen))
        elif kind < 0.8:
            provider = str(uuid.uuid4())
            sent = time.monotonic()
            status, body = _call(api, 'POST', '/resource_providers', {
                'name': 'storm-%s' % provider, 'uuid': provider})
            ledger.providers[provider] = [
                ('create', ledger.outcome(status, body, sent))]
            if rand.random() < 0.5 and \
                    ledger.providers[provider][0][1] == 'acked':
                status, body = _call(api, 'DELETE',
                                     '/resource_providers/%s' % provider)
                ledger.providers[provider].append(
                    ('delete', ledger.outcome(status, body)))
        else:
            provider = rand.choice(inventory_rps)
            with ledger.lock:
                # One writer at a time per provider: the ledger's order is
                # the order of the writes.
                if getattr(ledger, 'busy_' + provider, False):
                    continue
                setattr(ledger, 'busy_' + provider, True)
            try:
                status, body = _call(api, 'GET',
                                     '/resource_providers/%s' % provider)
                if status != 200:
                    ledger.outcome(status, body)
                    continue
                total = rand.randint(1, 10 ** 6)
                sent = time.monotonic()
                status, body = _call(
                    api, 'PUT', '/resource_providers/%s/inventories'
                    % provider, {
                        'resource_provider_generation': body['generation'],
                        'inventories': {'MEMORY_MB': {'total': total}}})
                outcome = ledger.outcome(status, body, sent)
                ledger.inventories[provider].append((total, outcome))
                if outcome == 'acked':
                    # Read your writes on the other API process.
                    seen_status, seen = _call(
                        other, 'GET', '/resource_providers/%s/inventories'
                        % provider)
                    if seen_status == 200 and seen[
                            'resource_provider_generation'] < body[
                            'resource_provider_generation']:
                        ledger.stale_reads.append((provider, seen, body))
            finally:
                setattr(ledger, 'busy_' + provider, False)


class Settled:
    """An API process asked as a client asks once the storm is over: a
    request answered 503 tachyon.graph.unavailable (the sentinels still
    switching: on a loaded machine they may fail over twice; a new primary
    that takes no write, so serves no read, until a replica is in touch)
    is sent again, for ``patience`` seconds at most.  A write's body may
    be a callable, called for each attempt (a write answered 503 may have
    been applied)."""

    def __init__(self, api, patience=60):
        self.api = api
        self.patience = patience

    def request(self, method, path, body=None, **options):
        deadline = time.monotonic() + self.patience
        while True:
            status, answer = self.api.request(
                method, path, body() if callable(body) else body,
                **options)
            if not _unavailable(status, answer) or \
                    time.monotonic() > deadline:
                return status, answer
            time.sleep(0.5)


def _manage(config, *arguments):
    return subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.manage',
         '--config-file', config] + list(arguments),
        capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize('fault', ['killed', 'paused'])
def test_primary_killed_mid_storm_loses_no_acknowledged_write(tmp_path,
                                                              fault):
    """``killed``: SIGKILL; ``paused``: SIGSTOP past the sentinels'
    down-after, SIGCONT once another server is promoted (a frozen VM that
    thaws): the old primary then holds an old graph and still says it is
    the primary until the sentinels demote it; no API process may read
    from it (every acknowledged DELETE reads back deleted on the other
    API process)."""
    cluster = sentinel_cluster.Cluster(tmp_path / 'cluster').start()
    apis = []
    try:
        conf = 'connection = %s\nreplica_acks = 1\nreplica_ack_timeout = 1\n' \
            % cluster.uri
        for number in range(2):
            apis.append(served.ServedPlacement(
                tmp_path / ('api-%d' % number), extra_conf=conf).start())
        race, inventory_rps = [], []
        for number in range(RACE_PROVIDERS + INVENTORY_PROVIDERS):
            provider = str(uuid.uuid4())
            status, _ = apis[0].request('POST', '/resource_providers', {
                'name': 'host-%d' % number, 'uuid': provider})
            assert status == 200
            if number < RACE_PROVIDERS:
                status, _ = apis[0].request(
                    'PUT', '/resource_providers/%s/inventories' % provider, {
                        'resource_provider_generation': 0,
                        'inventories': {'VCPU': {'total': RACE_VCPU}}})
                assert status == 200
                race.append(provider)
            else:
                inventory_rps.append(provider)

        # tachyon-status sees the replicas, and what replica_acks asks.
        for acks, code, said in ((1, 0, '2 replicas online'),
                                 (0, 1, 'a failover may lose'),
                                 (3, 2, 'every write will be answered 503')):
            config = tmp_path / ('status-%d.conf' % acks)
            config.write_text('[graph]\nconnection = %s\nreplica_acks = %d\n'
                              % (cluster.uri, acks))
            checked = subprocess.run(
                [sys.executable, '-m', 'tachyon_placement.cmd.status',
                 '--config-file', str(config), 'upgrade', 'check'],
                capture_output=True, text=True, timeout=120)
            assert checked.returncode == code, checked.stdout
            # The table wraps its lines.
            text = ' '.join(checked.stdout.replace('|', ' ').split())
            assert said in text, checked.stdout

        # A feed cursor from before the failover.
        status, feed = apis[0].request('GET', '/tachyon/changes',
                                       service='tachyon', version='1.0')
        assert status == 200, feed
        ledger = Ledger()
        stop = threading.Event()
        writers = [threading.Thread(
            target=_storm, args=(apis, ledger, race, inventory_rps, stop,
                                 seed)) for seed in range(WRITERS)]
        for writer in writers:
            writer.start()
        time.sleep(STORM_BEFORE_KILL)
        old = cluster.primary()
        ledger.killed_at = time.monotonic()
        if fault == 'killed':
            old.kill()
        else:
            old.process.send_signal(signal.SIGSTOP)
        new, promoted_after = cluster.wait_new_primary(old)
        if fault == 'paused':
            old.process.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while ledger.first_write_after_kill is None and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(STORM_AFTER_BACK)
        stop.set()
        for writer in writers:
            writer.join(60)
        assert ledger.first_write_after_kill is not None, ledger.statuses
        back_after = ledger.first_write_after_kill - ledger.killed_at
        print('failover: primary %d %s, %d promoted after %.1f s, first '
              'acknowledged write after %.1f s; answers %s' % (
                  old.port, fault, new.port, promoted_after, back_after,
                  dict(ledger.statuses)))
        assert not ledger.bad, [error for _status, body in ledger.bad[:3]
                                for error in body['errors']]
        assert ledger.statuses[503] + ledger.statuses[None] > 0, (
            'the kill went unnoticed: the test proves nothing')
        assert not ledger.stale_reads, ledger.stale_reads[:3]

        api = Settled(apis[1])
        lost = []
        for consumer, (provider, outcome) in ledger.claims.items():
            status, body = api.request('GET', '/allocations/%s' % consumer)
            held = body['allocations'] if status == 200 else {}
            deleted = ledger.deletes.get(consumer)
            if outcome == 'acked' and deleted is None:
                if set(held) != {provider} or \
                        held[provider]['resources'] != {'VCPU': 1}:
                    lost.append(('claim', consumer, held))
            elif outcome == 'acked' and deleted == 'acked':
                if held:
                    lost.append(('delete', consumer, held))
            elif outcome == 'refused' and held:
                lost.append(('refused claim applied', consumer, held))
        for provider, operations in ledger.providers.items():
            status, _ = api.request('GET', '/resource_providers/%s'
                                    % provider)
            last = operations[-1]
            if last == ('create', 'acked') and status != 200:
                lost.append(('provider', provider, status))
            if last == ('delete', 'acked') and status != 404:
                lost.append(('provider deletion', provider, status))
        for provider, writes in ledger.inventories.items():
            acked = [index for index, (_total, outcome) in enumerate(writes)
                     if outcome == 'acked']
            if not acked:
                continue
            # The last acknowledged total, or that of an unknown write
            # made after it.
            allowed = {total for total, outcome in writes[acked[-1]:]
                       if outcome != 'refused'}
            status, body = api.request(
                'GET', '/resource_providers/%s/inventories' % provider)
            total = body['inventories'].get('MEMORY_MB', {}).get('total')
            if total not in allowed:
                lost.append(('inventory', provider, total, writes[-3:]))
        assert not lost, lost[:10]
        for provider in race:
            status, body = api.request(
                'GET', '/resource_providers/%s/usages' % provider)
            assert body['usages']['VCPU'] <= RACE_VCPU, (provider, body)

        # The new primary may lack writes the old one had: every cursor
        # from before gets 410 (the client relists), none misses a change.
        status, gone = api.request(
            'GET', '/tachyon/changes?since=%d' % feed['cursor'],
            service='tachyon', version='1.0')
        assert status == 410, gone

        config = apis[0].config
        verified = _manage(config, 'db', 'verify')
        assert verified.returncode == 0, verified.stdout + verified.stderr
        print(verified.stdout)

        # The killed primary comes back as a replica; then a replica is
        # killed, misses writes, comes back: each resyncs and holds the
        # same graph as the primary.  The primary is the one the
        # sentinels name now: on a loaded machine they may fail over
        # again (a new primary that did not answer their pings for the
        # 1 s of down-after-milliseconds), and killing it would be
        # another failover, not a replica missing writes.
        if fault == 'killed':
            cluster.restart(old)
        primary = cluster.wait_replicas(len(cluster.servers) - 1)
        replica = [server for server in cluster.servers
                   if server is not primary][-1]
        replica.kill()
        for number in range(20):
            status, body = Settled(apis[number % 2]).request(
                'POST', '/resource_providers',
                lambda: {'name': 'missed-%s' % uuid.uuid4()})
            assert status == 200, (body, cluster.told())
        cluster.restart(replica)
        primary = cluster.wait_replicas(len(cluster.servers) - 1)
        for each in apis:
            each.stop()
        apis = []
        for server in cluster.servers:
            if server is primary:
                continue
            compared = _manage(config, 'db', 'compare',
                               'falkor://127.0.0.1:%d' % server.port)
            assert compared.returncode == 0, \
                compared.stdout + compared.stderr
            assert 'The graphs are equal.' in compared.stdout
        # And a replica that differs is told apart (the command can fail).
        replica = [server for server in cluster.servers
                   if server is not cluster.primary()][0]
        client = replica.client()
        client.config_set('replica-read-only', 'no')
        client.execute_command(
            'GRAPH.QUERY', 'placement',
            "MATCH (rp:ResourceProvider) WITH rp LIMIT 1 "
            "SET rp.generation = rp.generation + 100")
        differing = _manage(config, 'db', 'compare',
                            'falkor://127.0.0.1:%d' % replica.port)
        assert differing.returncode == 4, differing.stdout + differing.stderr
        assert 'ResourceProvider uuid=' in differing.stdout
    finally:
        for each in apis:
            each.stop()
        cluster.stop()
