"""tachyon-manage db backup and db restore, as an operator runs them: a
backup taken while the API serves and is written, restored into an empty
graph (of the suite's engine, and across engines), answers every
Placement read as before; generations go on; feed cursors from before get
410; a bad file or a full graph is refused with nothing written."""
import glob
import gzip
import json
import os
import subprocess
import sys
import threading
import uuid

import pytest

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.graph.schema import SCHEMA_VERSION
from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import served

PROJECT = 'b0b0b0b0-0000-4000-8000-000000000001'
USER = 'b0b0b0b0-0000-4000-8000-000000000002'
AGGREGATE = 'b0b0b0b0-0000-4000-8000-0000000000a1'
GPU = 'CUSTOM_BACKUP_GPU'
TRAIT = 'CUSTOM_BACKED_UP'
TOPOLOGY = {'sockets': [{'id': 0}], 'numa_nodes': [
    {'id': 0, 'socket': 0, 'cpus': [0, 1], 'memory_mb': 4096}],
    'pci_devices': [{'address': '0000:3b:00.%d' % index,
                     'vendor_id': '8086', 'product_id': '154c',
                     'class': '020000', 'numa_node': 0}
                    for index in range(2)]}


def _manage(config, *args):
    return subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.manage',
         '--config-file', config] + list(args) + (
             ['--no-progress'] if args[1] in ('backup', 'restore') else []),
        capture_output=True, text=True, timeout=600)


def _ok(answer, *statuses):
    status, body = answer
    assert status in (statuses or (200, 201, 204)), (status, body)
    return body


def _generation(api, provider):
    return _ok(api.request('GET', '/resource_providers/%s' % provider))[
        'generation']


def _provider(api, name, parent=None):
    provider = str(uuid.uuid4())
    body = {'name': name, 'uuid': provider}
    if parent:
        body['parent_provider_uuid'] = parent
    _ok(api.request('POST', '/resource_providers', body))
    return provider


def _inventories(api, provider, inventories):
    _ok(api.request('PUT', '/resource_providers/%s/inventories' % provider, {
        'resource_provider_generation': _generation(api, provider),
        'inventories': inventories}))


def _claim(api, consumer, allocations, generation=None):
    return api.request('PUT', '/allocations/%s' % consumer, {
        'allocations': {provider: {'resources': resources}
                        for provider, resources in allocations.items()},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': generation, 'consumer_type': 'INSTANCE'})


def _populate(api):
    """A small cloud with one of everything a backup must keep; returns
    (compute hosts, consumers)."""
    _ok(api.request('PUT', '/resource_classes/%s' % GPU))
    _ok(api.request('PUT', '/traits/%s' % TRAIT))
    hosts = []
    for index in range(4):
        host = _provider(api, 'cn%d' % index)
        hosts.append(host)
        _inventories(api, host, {
            'VCPU': {'total': 16, 'allocation_ratio': 4.0},
            'MEMORY_MB': {'total': 8192, 'reserved': 512, 'step_size': 256},
        })
        gpu = _provider(api, 'cn%d_gpu' % index, parent=host)
        _inventories(api, gpu, {GPU: {'total': 2, 'max_unit': 1}})
        _ok(api.request('PUT', '/resource_providers/%s/traits' % host, {
            'resource_provider_generation': _generation(api, host),
            'traits': [TRAIT, 'HW_CPU_X86_AVX2']}))
        _ok(api.request('PUT', '/resource_providers/%s/aggregates' % host, {
            'resource_provider_generation': _generation(api, host),
            'aggregates': [AGGREGATE]}))
    shared = _provider(api, 'shared-disk')
    _inventories(api, shared, {'DISK_GB': {'total': 1000}})
    _ok(api.request('PUT', '/resource_providers/%s/traits' % shared, {
        'resource_provider_generation': _generation(api, shared),
        'traits': ['MISC_SHARES_VIA_AGGREGATE']}))
    _ok(api.request('PUT', '/resource_providers/%s/aggregates' % shared, {
        'resource_provider_generation': _generation(api, shared),
        'aggregates': [AGGREGATE]}))
    consumers = []
    for index in range(6):
        consumer = str(uuid.uuid4())
        consumers.append(consumer)
        _ok(_claim(api, consumer, {
            hosts[index % 4]: {'VCPU': 2, 'MEMORY_MB': 1024},
            shared: {'DISK_GB': 10}}))
    # Deletions leave records the feed keeps.
    _ok(api.request('DELETE', '/allocations/%s' % consumers.pop()))
    gone = _provider(api, 'gone')
    _ok(api.request('DELETE', '/resource_providers/%s' % gone))
    _ok(api.request('PUT', '/tachyon/topology/hosts/cn0', TOPOLOGY,
                    service='tachyon'))
    return hosts + [shared], consumers


def _sorted(value):
    """Lists in a stable order (an engine may list in another order)."""
    if isinstance(value, dict):
        return {key: _sorted(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_sorted(item) for item in value),
                      key=lambda item: json.dumps(item, sort_keys=True))
    return value


def _reads(api, providers, consumers):
    """What Placement's clients read, path by path."""
    paths = ['/resource_providers', '/resource_classes', '/traits',
             '/usages?project_id=%s' % PROJECT,
             '/resource_providers?member_of=%s' % AGGREGATE,
             '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,'
             'DISK_GB:5',
             '/allocation_candidates?resources_CPU=VCPU:1&resources_GPU=%s:1'
             '&same_subtree=_CPU,_GPU&group_policy=none' % GPU]
    for provider in providers:
        paths += ['/resource_providers/%s%s' % (provider, tail) for tail in (
            '', '/inventories', '/usages', '/traits', '/aggregates',
            '/allocations')]
    paths += ['/allocations/%s' % consumer for consumer in consumers]
    answers = {path: _sorted(api.request('GET', path)) for path in paths}
    assert all(status == 200 for status, _body in answers.values()), \
        [path for path, (status, _body) in answers.items() if status != 200]
    answers['topology'] = _sorted(api.request(
        'GET', '/tachyon/topology/hosts/cn0', service='tachyon'))
    return answers


def _usage_matches_allocations(api):
    """Every provider's usage is the sum of the allocations against it:
    a backup torn between two writes would break it."""
    for provider in _ok(api.request('GET', '/resource_providers'))[
            'resource_providers']:
        usages = _ok(api.request('GET', '/resource_providers/%s/usages'
                                 % provider['uuid']))['usages']
        held = {}
        allocations = _ok(api.request(
            'GET', '/resource_providers/%s/allocations'
            % provider['uuid']))['allocations']
        for consumer in allocations.values():
            for name, amount in consumer['resources'].items():
                held[name] = held.get(name, 0) + amount
        assert {name: used for name, used in usages.items() if used} == \
            held, provider['name']


class _Claims(threading.Thread):
    """Claims and frees on one host, one after the other, until stopped:
    the writes a backup must not tear."""

    def __init__(self, api, host):
        super().__init__(daemon=True)
        self.api = api
        self.host = host
        self.done = 0
        self.failures = []
        self.kept = []
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            consumer = str(uuid.uuid4())
            status, body = _claim(self.api, consumer,
                                  {self.host: {'VCPU': 1,
                                               'MEMORY_MB': 256}})
            if status != 204:
                self.failures.append((status, body))
                continue
            # Keep a few (the restored graph holds some of them), free
            # the rest, so the host never fills.
            self.kept.append(consumer)
            if len(self.kept) > 5:
                self.api.request('DELETE',
                                 '/allocations/%s' % self.kept.pop(0))
            self.done += 1

    def stop(self):
        self._halt.set()
        self.join(60)


def _header(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as lines:
        records = [json.loads(line) for line in lines]
    return records[0], records[1:]


def _restored(tmp_path, name, backup):
    """A new API's graph (the suite's engine, emptied), restored from
    ``backup`` and served."""
    target = served.ServedPlacement(tmp_path / name)
    done = _manage(target.config, 'db', 'restore', backup)
    assert done.returncode == 0, done.stderr
    return target, done


def test_backup_while_written_then_restore_answers_as_before(api, tmp_path):
    providers, consumers = _populate(api)
    before = _reads(api, providers, consumers)
    _status, feed = api.request('GET', '/tachyon/changes?since=0',
                                service='tachyon')
    cursor = feed['cursor']
    generation = _generation(api, providers[0])

    # While one thread claims and frees without a pause.
    claims = _Claims(api, providers[1])
    claims.start()
    try:
        taken = _manage(api.config, 'db', 'backup',
                        str(tmp_path / 'while-written.jsonl.gz'))
    finally:
        claims.stop()
    assert taken.returncode == 0, taken.stderr
    assert claims.done > 0 and not claims.failures, claims.failures
    print(taken.stdout.strip(), '(%d claims meanwhile)' % claims.done)
    header, records = _header(str(tmp_path / 'while-written.jsonl.gz'))
    assert header['schema_version'] == SCHEMA_VERSION
    assert header['engine'] == ('neo4j' if engines.NEO4J_URI
                                else 'falkordb')
    # One graph version: nothing in it was stamped after it.
    stamps = [record['properties'].get('stamp', 0) for record in records
              if 'node' in record]
    assert max(stamps) <= header['graph_version']
    assert records[-1]['end']['nodes'] == len(stamps)

    # Quiet now: this backup is the graph the reads above answered from,
    # plus the claims left behind; read them again to compare.
    before = _reads(api, providers, consumers)
    usages_before = _ok(api.request('GET', '/usages?project_id=%s'
                                    % PROJECT))
    backup = str(tmp_path / 'quiet.jsonl')
    assert _manage(api.config, 'db', 'backup', backup).returncode == 0
    api.stop()

    torn_check, _done = _restored(tmp_path, 'torn-check',
                                  str(tmp_path / 'while-written.jsonl.gz'))
    torn_check.start()
    try:
        _usage_matches_allocations(torn_check)
    finally:
        torn_check.stop()

    target, done = _restored(tmp_path, 'restored', backup)
    assert 'Restored graph version' in done.stdout, done.stdout
    target.start()
    try:
        assert _reads(target, providers, consumers) == before
        assert _ok(target.request('GET', '/usages?project_id=%s'
                                  % PROJECT)) == usages_before
        # Generations go on from where they were.
        _ok(target.request(
            'PUT', '/resource_providers/%s/traits' % providers[0], {
                'resource_provider_generation': generation,
                'traits': [TRAIT]}))
        status, body = target.request(
            'PUT', '/resource_providers/%s/traits' % providers[0], {
                'resource_provider_generation': generation,
                'traits': [TRAIT]})
        assert status == 409, body
        # A cursor from before the restore: 410, relist.
        status, body = target.request(
            'GET', '/tachyon/changes?since=%d' % cursor, service='tachyon')
        assert status == 410, body
        status, body = target.request('GET', '/tachyon/changes?since=0',
                                      service='tachyon')
        assert status == 410, body
        relisted = target.request('GET', '/tachyon/changes',
                                  service='tachyon')
        assert relisted[0] == 200, relisted
        claimed = str(uuid.uuid4())
        _ok(_claim(target, claimed,
                   {providers[2]: {'VCPU': 1, 'MEMORY_MB': 256}}))
        # With wait, as the api-ref tells a client that wants to see its
        # write: the built-in feed server reads a replica of the graph,
        # which may not hold the claim yet the moment its 204 is sent.
        status, body = target.request(
            'GET', '/tachyon/changes?since=%d&wait=10'
            % relisted[1]['cursor'], service='tachyon')
        assert status == 200, body
        assert claimed in [change['uuid'] for change in body['changes']], (
            relisted[1]['cursor'], body)
    finally:
        target.stop()


def test_restore_refuses_a_full_graph_and_bad_files(api, tmp_path):
    providers, _consumers = _populate(api)
    backup = str(tmp_path / 'good.jsonl')
    assert _manage(api.config, 'db', 'backup', backup).returncode == 0
    count = len(_ok(api.request('GET', '/resource_providers'))[
        'resource_providers'])
    with open(backup) as source:
        lines = source.readlines()

    def variant(name, lines):
        path = str(tmp_path / name)
        with open(path, 'w') as out:
            out.writelines(lines)
        return path

    header = json.loads(lines[0])
    newer = variant('newer.jsonl', [json.dumps(dict(
        header, schema_version=SCHEMA_VERSION + 1)) + '\n'] + lines[1:])
    cases = {
        'into a graph that holds providers': backup,
        'cut short': variant('cut.jsonl', lines[:-5]),
        'a line that is not JSON': variant(
            'garbled.jsonl', lines[:3] + ['{"node": \n'] + lines[3:]),
        'an unknown label': variant('label.jsonl', lines[:1] + [
            json.dumps({'node': 'x', 'labels': ['Unknown'],
                        'properties': {}}) + '\n'] + lines[1:]),
        'a newer schema': newer,
        'not a backup': variant('other.jsonl', ['{"hello": 1}\n']),
        # The review's: served after a restore, exit 0.
        'a provider uuid that is none': variant('uuid.jsonl', [
            _with_property(line, 'ResourceProvider', 'uuid', 'not-a-uuid')
            for line in lines]),
        'a generation that is a string': variant('generation.jsonl', [
            _with_property(line, 'ResourceProvider', 'generation', 'evil')
            for line in lines]),
        'an inventory total past the API\'s': variant('total.jsonl', [
            _with_property(line, 'PROVIDES', 'total', 2 ** 64)
            for line in lines]),
    }
    for case, path in cases.items():
        done = _manage(api.config, 'db', 'restore', path)
        assert done.returncode == 3, (case, done.stdout, done.stderr)
        assert 'refused' in done.stderr, (case, done.stderr)
        print(case, '->', done.stderr.strip().splitlines()[-1])
        if case == 'a newer schema':
            # The file is named, not "the graph".
            assert 'newer.jsonl was taken from a graph of schema' in (
                done.stderr), done.stderr
        # Nothing was written: the graph serves as it was.
        assert len(_ok(api.request('GET', '/resource_providers'))[
            'resource_providers']) == count, case
    assert _generation(api, providers[0]) >= 0


def _with_property(line, name, key, value):
    """``line`` with ``key`` set to ``value`` when it is a node labelled
    ``name`` or a relationship of type ``name``."""
    record = json.loads(line)
    if name in record.get('labels', ()) or record.get(
            'relationship') == name:
        record['properties'][key] = value
        return json.dumps(record) + '\n'
    return line


def test_an_interrupted_restore_is_refused_then_done_again(api, tmp_path):
    _populate(api)
    backup = str(tmp_path / 'backup.jsonl')
    assert _manage(api.config, 'db', 'backup', backup).returncode == 0
    api.stop()
    target = served.ServedPlacement(tmp_path / 'target')
    # What a restore killed half-way leaves: the marker and some nodes.
    store = deploy.open_store(
        tachyon_conf.new_conf(['--config-file', target.config]), sync=False)
    try:
        store.engine.ensure_schema()
        store.backups.begin_restore(backup)
        store.backups.restore_nodes('Consumer', [
            {'id': 'x', 'props': {'uuid': str(uuid.uuid4())}}])
    finally:
        store.close()
    status = _manage(target.config, 'db', 'sync')
    assert status.returncode == 1, status.stdout
    assert 'did not finish' in status.stderr, status.stderr
    with pytest.raises(RuntimeError, match='did not finish'):
        target.start(timeout=60)
    check = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.status',
         '--config-file', target.config, 'upgrade', 'check'],
        capture_output=True, text=True, timeout=120)
    assert check.returncode == 2 and 'did not finish' in check.stdout, \
        check.stdout
    done = _manage(target.config, 'db', 'restore', backup)
    assert done.returncode == 0, done.stderr
    target.start()
    try:
        _usage_matches_allocations(target)
    finally:
        target.stop()


@pytest.mark.skipif(not engines.NEO4J_URI, reason='needs both engines: runs '
                    'in the Neo4j pass, beside an embedded FalkorDB')
def test_neo4j_to_falkordb_and_back(api, tmp_path):
    providers, consumers = _populate(api)
    before = _reads(api, providers, consumers)
    from_neo4j = str(tmp_path / 'neo4j.jsonl.gz')
    assert _manage(api.config, 'db', 'backup', from_neo4j).returncode == 0
    api.stop()

    falkordb = served.ServedPlacement(tmp_path / 'falkordb')
    with open(falkordb.config, 'w') as out:
        out.write('[api]\nauth_strategy = noauth2\n[graph]\ndata_dir = %s\n'
                  % (tmp_path / 'falkordb' / 'graph'))
    done = _manage(falkordb.config, 'db', 'restore', from_neo4j)
    assert done.returncode == 0, done.stderr
    falkordb.start()
    try:
        assert _reads(falkordb, providers, consumers) == before
        from_falkordb = str(tmp_path / 'falkordb.jsonl')
        assert _manage(falkordb.config, 'db', 'backup',
                       from_falkordb).returncode == 0
        assert _header(from_falkordb)[0]['engine'] == 'falkordb'
    finally:
        falkordb.stop()

    back, _done = _restored(tmp_path, 'back', from_falkordb)
    back.start()
    try:
        assert _reads(back, providers, consumers) == before
    finally:
        back.stop()


@pytest.mark.skipif(bool(engines.NEO4J_URI), reason='FalkorDB reads its '
                    'copy of the graph by windows of node ids; Neo4j streams')
def test_windows_of_node_ids_read_every_record_once(api, tmp_path,
                                                    monkeypatch):
    import io

    from tachyon_placement.backup import run
    from tachyon_placement.graph import falkordb_engine
    _populate(api)
    api.stop()      # the graph stands still: two backups must be equal
    store = deploy.open_store(
        tachyon_conf.new_conf(['--config-file', api.config]), sync=False)
    try:
        whole = str(tmp_path / 'whole.jsonl')
        run.backup(store, whole, io.StringIO(), progress=False)
        monkeypatch.setattr(falkordb_engine._FrozenCopy, 'WINDOW', 7)
        windowed = str(tmp_path / 'windowed.jsonl')
        run.backup(store, windowed, io.StringIO(), progress=False)
    finally:
        store.close()
    whole_header, whole_records = _header(whole)
    windowed_header, windowed_records = _header(windowed)
    assert whole_header['graph_version'] == windowed_header['graph_version']
    assert len(whole_records) > 7 * 20
    assert sorted(map(json.dumps, whole_records)) == sorted(
        map(json.dumps, windowed_records))


GRAPHS = os.path.join(os.path.dirname(__file__), 'fixtures', 'graphs')


def _fixture_variants(tmp_path):
    """The kept graphs, each as written, and the newest also as a release
    before schema versions would have written it (no version recorded)."""
    kept = sorted(glob.glob(os.path.join(GRAPHS, 'schema-*.jsonl')))
    assert kept, GRAPHS
    variants = [(path, path[:-len('.jsonl')] + '.reads.json')
                for path in kept]
    header, records = _header(kept[-1])
    unversioned = str(tmp_path / 'unversioned.jsonl')
    with open(unversioned, 'w') as out:
        out.write(json.dumps(dict(header, schema_version=0)) + '\n')
        kept_records = [record for record in records if not (
            'node' in record and record['labels'] == ['Meta']
            and record['properties'].get('key') == 'schema')]
        kept_records[-1] = {'end': dict(
            kept_records[-1]['end'],
            nodes=kept_records[-1]['end']['nodes'] - 1)}
        for record in kept_records:
            out.write(json.dumps(record) + '\n')
    variants.append((unversioned, variants[-1][1]))
    return variants


def test_graphs_earlier_releases_wrote_are_migrated_and_answer(tmp_path):
    """tests/functional/fixtures/graphs/schema-N.jsonl: a graph written by
    the release whose schema version was N (made with test_backup's
    _populate and kept as it was: never regenerated; a release that
    raises the schema version adds its own), and what Placement's reads
    answered then.  Restored and migrated by this release, it answers the
    same."""
    for index, (path, reads_path) in enumerate(_fixture_variants(tmp_path)):
        with open(reads_path) as source:
            expected = json.load(source)
        target = served.ServedPlacement(tmp_path / ('graph-%d' % index))
        done = _manage(target.config, 'db', 'restore', path)
        assert done.returncode == 0, done.stderr
        version = _header(path)[0]['schema_version']
        if version < SCHEMA_VERSION:
            assert 'Migrated the graph to schema version %d' \
                % SCHEMA_VERSION in done.stdout, done.stdout
        target.start()
        try:
            answers = json.loads(json.dumps(_reads(
                target, expected['providers'], expected['consumers'])))
            assert answers == expected['reads'], path
            _usage_matches_allocations(target)
        finally:
            target.stop()
        check = subprocess.run(
            [sys.executable, '-m', 'tachyon_placement.cmd.status',
             '--config-file', target.config, 'upgrade', 'check'],
            capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout
