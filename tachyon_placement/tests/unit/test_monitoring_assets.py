"""The alert rules and the Grafana dashboard in etc/ are valid for
Prometheus (Debian's promtool checks them) and use only metrics Tachyon
exports."""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from tachyon_placement.monitoring import metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
RULES = os.path.join(ROOT, 'etc', 'prometheus', 'tachyon-alerts.yaml')
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana', 'tachyon-dashboard.json')
NAME = re.compile(r'\btachyon_[a-z_]+\b')


def _promtool():
    path = shutil.which('promtool')
    if path is None:
        pytest.skip('no promtool (Debian package prometheus; '
                    'tools/run-tests.sh installs it)')
    return path


def _exported():
    """Every series name Tachyon's metrics can have."""
    import prometheus_client
    metrics.enable()
    names = set()
    for family in prometheus_client.REGISTRY.collect():
        if not family.name.startswith('tachyon_'):
            continue
        if family.type == 'counter':
            names.add(family.name + '_total')
        elif family.type == 'histogram':
            names.update(family.name + suffix
                         for suffix in ('_bucket', '_count', '_sum'))
        else:
            names.add(family.name)
    return names


def _dashboard_exprs():
    with open(DASHBOARD) as source:
        dashboard = json.load(source)
    exprs = [target['expr'] for panel in dashboard['panels']
             for target in panel['targets']]
    assert len(dashboard['panels']) >= 10 and exprs
    return exprs


def _rule_exprs():
    with open(RULES) as source:
        rules = yaml.safe_load(source)
    return {rule['alert']: rule['expr'] for group in rules['groups']
            for rule in group['rules']}


def test_the_alert_rules_pass_promtool():
    done = subprocess.run([_promtool(), 'check', 'rules', RULES],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    # What an operator asked for: engine down, collector failing, feed
    # lag, 5xx rate, candidate latency.
    assert {'TachyonEngineDown', 'TachyonCollectorFailing',
            'TachyonFeedLag', 'TachyonServerErrors',
            'TachyonCandidateLatency'} <= set(_rule_exprs())


def test_the_dashboards_queries_parse(tmp_path):
    # promtool parses queries in rule files: each panel's query becomes a
    # recording rule of a scratch file.
    scratch = tmp_path / 'dashboard-rules.yaml'
    scratch.write_text(yaml.safe_dump({'groups': [{
        'name': 'dashboard', 'rules': [
            {'record': 'tachyon:dashboard:query%d' % number, 'expr': expr}
            for number, expr in enumerate(_dashboard_exprs())]}]}))
    done = subprocess.run([_promtool(), 'check', 'rules', str(scratch)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_and_dashboard_use_only_exported_metrics():
    exported = _exported()
    used = set()
    for expr in list(_rule_exprs().values()) + _dashboard_exprs():
        used.update(NAME.findall(expr))
    assert used and used <= exported, sorted(used - exported)
    # Most of what is exported is on the dashboard.
    families = {re.sub(r'_(bucket|count|sum)$', '', name)
                for name in exported}
    shown = {re.sub(r'_(bucket|count|sum)$', '', name) for name in used}
    assert len(shown) >= 0.8 * len(families), sorted(families - shown)


def test_each_rule_is_quiet_when_healthy_and_fires_on_its_fault():
    """promtool's unit tests shipped beside the rules (etc/prometheus/
    tachyon-alerts-tests.yaml): a healthy deployment with its by-design
    503s, an idle one without subscribers, a restored one; then each
    rule's fault.  The rules before them fired on the first three
    (the health probe's 503s, the feed's head without subscribers) and
    missed the feed server going down."""
    tests = os.path.join(ROOT, 'etc', 'prometheus',
                         'tachyon-alerts-tests.yaml')
    done = subprocess.run([_promtool(), 'test', 'rules', tests],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tests) as source:
        cases = yaml.safe_load(source)['tests']
    fired = {check['alertname'] for case in cases
             for check in case['alert_rule_test'] if check['exp_alerts']}
    assert fired == set(_rule_exprs()), set(_rule_exprs()) - fired
