"""tachyon-status upgrade check against the suite's engine, as an
operator runs it: its table and exit codes (oslo.upgradecheck's: 0
success, 1 warning, 2 failure)."""
import subprocess
import sys

from tachyon_placement import deploy
from tachyon_placement import conf as tachyon_conf
from tachyon_placement.graph.cypher import Statement
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


def test_upgrade_check_passes_then_names_what_is_wrong(api, tmp_path):
    api.stop()      # the check runs beside no API, on the same graph
    code, out = _check(api.config)
    assert code == 0, out
    for title in ('Graph engine', 'Standard resource classes and traits',
                  'Policy rules', 'Telemetry'):
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
    config = tmp_path / 'warned.conf'
    with open(api.config) as source:
        config.write_text(source.read() + (
            '\n[oslo_policy]\npolicy_file = %s\n'
            '[telemetry]\nurl = http://127.0.0.1:%d\nquery_timeout = 2\n'
            % (policy_file, served.free_port())))
    code, out = _check(str(config))
    assert code == 1, out
    assert 'placement:no_such:rule' in out, out
    assert 'cannot be queried' in out, out


def test_an_engine_that_does_not_answer_fails_the_check(tmp_path):
    config = tmp_path / 'unreachable.conf'
    scheme = 'bolt' if engines.NEO4J_URI else 'falkor'
    config.write_text('[graph]\nconnection = %s://127.0.0.1:%d\n'
                      % (scheme, served.free_port()))
    code, out = _check(str(config))
    assert code == 2, out
    assert 'cannot be reached' in out, out
