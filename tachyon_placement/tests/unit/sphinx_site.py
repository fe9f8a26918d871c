"""Build a Sphinx site as tox does (warnings as errors), for the tests of
the documentation site and the API reference."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def build(source, workdir):
    """The html directory of ``source`` (relative to the repository) built
    with ``sphinx -W --keep-going`` under ``workdir``; the build's output
    is the assertion's message when it fails."""
    html = os.path.join(str(workdir), 'html')
    done = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html',
         '-d', os.path.join(str(workdir), 'doctrees'),
         os.path.join(ROOT, source), html],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return html
