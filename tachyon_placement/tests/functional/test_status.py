"""tachyon-status upgrade check against the suite's engine, as an
operator runs it: its table and exit codes (oslo.upgradecheck's: 0
success, 1 warning, 2 failure)."""
import subprocess
import sys

from tachyon_placement import deploy
from tachyon_placement import conf as tachyon_conf
from tachyon_placement.graph.cypher import Statement
from tachyon_placement.graph import migrations
from tachyon_placement.graph.schema import SCHEMA_VERSION
from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import served

DROP_TRAIT = Statement('test_drop_trait', common="""
MATCH (t:Trait {name: $name})
DETACH DELETE t
""")


def _check(config):
    done = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.status',
         '--config-file', config, 'upgrade', 'check'],
        capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def _check_with(api, path, extra):
    """The check's exit code and its table's text (lines unwrapped) with
    ``extra`` added to ``api``'s configuration, written at ``path``."""
    with open(api.config) as source:
        path.write_text(source.read() + '\n' + extra)
    code, out = _check(str(path))
    return code, ' '.join(out.replace('|', ' ').split())


def test_upgrade_check_passes_then_names_what_is_wrong(api, tmp_path):
    api.stop()      # the check runs beside no API, on the same graph
    code, out = _check(api.config)
    assert code == 0, out
    for title in ('Graph engine', 'Standard resource classes and traits',
                  'Policy rules', 'Telemetry', 'Graph replication',
                  'What-if sessions'):
        assert title in out, out
    assert 'Failure' not in out and 'Warning' not in out, out

    # A graph made before os-traits gained OWNER_NOVA: a failure.
    conf = tachyon_conf.new_conf(['--config-file', api.config])
    store = deploy.open_store(conf, sync=False)
    try:
        store.engine.write(DROP_TRAIT, name='OWNER_NOVA')
    finally:
        store.close()
    code, out = _check(api.config)
    assert code == 2, out
    assert 'OWNER_NOVA' in out and 'tachyon-manage db sync' in out, out
    synced = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.manage',
         '--config-file', api.config, 'db', 'sync'],
        capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0, synced.stderr
    assert _check(api.config)[0] == 0

    # A policy file with a rule nobody defines, and Prometheus that does
    # not answer: warnings.
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"placement:no_such:rule": "role:admin"\n')
    code, text = _check_with(
        api, tmp_path / 'warned.conf',
        '[oslo_policy]\npolicy_file = %s\n'
        '[telemetry]\nurl = http://127.0.0.1:%d\nquery_timeout = 2\n'
        % (policy_file, served.free_port()))
    assert code == 1, text
    assert 'placement:no_such:rule' in text, text
    assert 'cannot be queried' in text, text

    # Sessions whose default life is longer than allowed: a failure.
    code, text = _check_with(api, tmp_path / 'sessions.conf',
                             '[whatif]\ndefault_ttl = 600\nmax_ttl = 300\n')
    assert code == 2, text
    assert 'default_ttl = 600 is more than max_ttl = 300' in text, text


def test_an_engine_that_does_not_answer_fails_the_check(tmp_path):
    config = tmp_path / 'unreachable.conf'
    scheme = 'bolt' if engines.NEO4J_URI else 'falkor'
    config.write_text('[graph]\nconnection = %s://127.0.0.1:%d\n'
                      % (scheme, served.free_port()))
    code, out = _check(str(config))
    assert code == 2, out
    assert 'cannot be reached' in out, out


def _manage(config, *args):
    return subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.manage',
         '--config-file', config] + list(args),
        capture_output=True, text=True, timeout=300)


def _record_schema(config, version):
    conf = tachyon_conf.new_conf(['--config-file', config])
    store = deploy.open_store(conf, sync=False)
    try:
        if version is None:
            store.engine.write(DROP_SCHEMA)
        else:
            store.schema.record(version)
        return store.schema.version()
    finally:
        store.close()


DROP_SCHEMA = Statement('test_drop_schema_version', common="""
MATCH (schema:Meta {key: 'schema'})
DELETE schema
""")


def test_schema_version_older_is_migrated_newer_is_refused(api):
    api.stop()
    assert _record_schema(api.config, SCHEMA_VERSION) == SCHEMA_VERSION
    code, out = _check(api.config)
    assert code == 0 and 'schema version %d' % SCHEMA_VERSION in out, out

    # A graph an earlier release wrote: no version recorded, data there.
    assert _record_schema(api.config, None) == migrations.UNVERSIONED
    code, out = _check(api.config)
    assert code == 1, out
    assert '0 (none recorded)' in out and 'db sync' in out, out
    synced = _manage(api.config, 'db', 'sync')
    assert synced.returncode == 0, synced.stderr
    assert 'Migrated the graph to schema version 1' in synced.stdout
    assert _check(api.config)[0] == 0
    again = _manage(api.config, 'db', 'sync')
    assert 'Migrated' not in again.stdout, again.stdout

    # A graph a newer release wrote: refused by the check, db sync and
    # the API, and left as it is.
    newer = SCHEMA_VERSION + 1
    _record_schema(api.config, newer)
    code, out = _check(api.config)
    assert code == 2 and 'newer release' in out, out
    refused = _manage(api.config, 'db', 'sync')
    assert refused.returncode == 1, refused.stdout
    assert 'refused' in refused.stderr and 'version %d' % newer in \
        refused.stderr, refused.stderr
    started = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.api',
         '--config-file', api.config, '--port', str(served.free_port())],
        capture_output=True, text=True, timeout=120)
    assert started.returncode == 1, started.stdout + started.stderr
    assert 'newer release' in started.stderr, started.stderr
    assert _record_schema(api.config, SCHEMA_VERSION) == SCHEMA_VERSION


def test_affinity_rules_without_live_numa_room_are_a_warning(api, tmp_path):
    status, _ = api.request('PUT', '/resource_classes/CUSTOM_GPU')
    assert status in (201, 204)
    status, body = api.request('PUT', '/tachyon/pci_affinity/gpus', {
        'resource_class': 'CUSTOM_GPU', 'policy': 'required'},
        service='tachyon', version='1.0')
    assert status in (200, 201), body
    api.stop()
    code, out = _check(api.config)
    text = ' '.join(out.replace('|', ' ').split())
    assert code == 1, out
    assert 'no [telemetry] numa_free_memory_metric' in text, out
    code, text = _check_with(api, tmp_path / 'numa.conf',
                             '[telemetry]\nnuma_free_memory_metric = nope\n')
    assert code == 2, text
    assert 'numa_free_memory_metric = nope is no stored metric' in text, text


MISNAME = Statement('test_misname_a_consumer', common="""
MATCH (c:Consumer {uuid: $uuid})-[held:CONSUMES]->(:ResourceProvider)
SET c.consumer_type = c.user_id, c.user_id = held.resource_class,
    held.resource_class = $kind
""")


def test_db_verify_finds_values_under_wrong_names(api, tmp_path):
    """What a replica that named values otherwise would serve once
    promoted (ha.rst): a consumer whose type holds its user id and whose
    user id holds a resource class, an allocation of a class that does
    not exist; the sums still agree, db verify says what is wrong (exit
    4); a graph without it passes."""
    status, provider = api.request('POST', '/resource_providers',
                                   {'name': 'misnamed'})
    assert status == 200, provider
    status, _ = api.request(
        'PUT', '/resource_providers/%s/inventories' % provider['uuid'], {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 8}}})
    assert status == 200
    consumers = []
    for number in range(2):
        consumer = '%08d-0000-4000-8000-000000000000' % number
        status, body = api.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {provider['uuid']: {'resources': {'VCPU': 1}}},
            'project_id': 'project-one', 'user_id': 'user-one',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        assert status == 204, body
        consumers.append(consumer)
    verified = _manage(api.config, 'db', 'verify')
    assert verified.returncode == 0, verified.stdout + verified.stderr

    conf = tachyon_conf.new_conf(['--config-file', api.config])
    store = deploy.open_store(conf, sync=False)
    try:
        store.engine.write(MISNAME, uuid=consumers[1], kind='INSTANCE')
    finally:
        store.close()
    verified = _manage(api.config, 'db', 'verify')
    assert verified.returncode == 4, verified.stdout + verified.stderr
    out = verified.stdout
    assert ("consumer %s: consumer_type 'user-one' is no consumer type"
            % consumers[1]) in out, out
    assert "resource class 'INSTANCE', which does not exist" in out, out
    assert consumers[0] not in out, out


def test_db_verify_of_a_graph_never_synced_says_to_sync(tmp_path):
    """Not the engine's "Invalid graph operation on empty key"."""
    engines.wipe_shared_engine()
    config = tmp_path / 'empty.conf'
    config.write_text('[graph]\n' + engines.served_graph_conf(
        str(tmp_path / 'graph'), 'everysec'))
    verified = _manage(str(config), 'db', 'verify')
    assert verified.returncode == 5, verified.stdout + verified.stderr
    assert 'never synced' in verified.stderr, verified.stderr
    assert 'tachyon-manage db sync' in verified.stderr, verified.stderr
    assert 'empty key' not in verified.stderr, verified.stderr
