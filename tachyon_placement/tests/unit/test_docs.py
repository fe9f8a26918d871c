"""doc/source builds with Sphinx, warnings as errors (what tox -e docs
runs): the admin guides, and the configuration and policy references
generated from the code, which show every option group and rule."""
import os
import subprocess
import sys

from tachyon_placement import policies
from tachyon_placement.conf import opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def test_the_docs_build_without_warnings(tmp_path):
    done = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html',
         '-d', str(tmp_path / 'doctrees'),
         os.path.join(ROOT, 'doc', 'source'), str(tmp_path / 'html')],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    html = tmp_path / 'html'
    options = (html / 'configuration' / 'config.html').read_text()
    for group, listed in opts.list_opts():
        name = getattr(group, 'name', group)
        assert name in options, name
        for option in listed:
            assert option.dest in options, (name, option.dest)
    rules = (html / 'configuration' / 'policy.html').read_text()
    for rule in policies.list_rules():
        assert rule.name in rules, rule.name
    for guide in ('capacity', 'whatif', 'telemetry', 'ha', 'backup'):
        assert (html / 'admin' / ('%s.html' % guide)).exists(), guide
