"""The documentation's shell sessions run as written.

Every ``console`` block of README.md and of the pages of doc/source
(fenced ```` ```console ```` in Markdown, ``.. code-block:: console`` in
reStructuredText) is a shell session: lines starting with ``$ `` are
commands, the lines after one are its output.  The blocks of a page run in
order, in one bash, against a Tachyon of their own served on the suite's
engine with the development configuration (noauth2); the output of each
command is compared as doctest does with ELLIPSIS and NORMALIZE_WHITESPACE
(``...`` stands for any text) and each command must succeed.  Only the
service's address and configuration file differ from what is written:
``http://127.0.0.1:8778`` and ``/etc/tachyon/placement.conf`` are replaced
by the served instance's.  Examples that need what a test cannot have
(devstack, Nova, an Apache) are written as other blocks (``shell``,
``ini``, ...) and not run.
"""
import doctest
import glob
import os
import re
import subprocess
import sys

import pytest

from tachyon_placement.tests.functional import served

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
ADDRESS = 'http://127.0.0.1:8778'
CONFIG = '/etc/tachyon/placement.conf'
# Printed after each command: its index and exit status.
MARKER = '@@tachyon-doc-example %d rc=%s@@'
_MARKED = re.compile(r'\n?@@tachyon-doc-example (\d+) rc=(\d+)@@\n')
_FENCE = re.compile(r'^```console\n(.*?)^```', re.M | re.S)
_DIRECTIVE = re.compile(r'^( *)\.\. code-block:: console\n((?:\1 +:.*\n)*)'
                        r'\n((?:\1 +.*\n|\n)+)', re.M)


def console_blocks(path):
    """[(first line number, block text)] of the console blocks of a page."""
    with open(path) as page:
        text = page.read()
    found = [(text.count('\n', 0, match.start()) + 2, match.group(1))
             for match in _FENCE.finditer(text)]
    for match in _DIRECTIVE.finditer(text):
        lines = match.group(3).splitlines()
        indent = min(len(line) - len(line.lstrip())
                     for line in lines if line.strip())
        found.append((text.count('\n', 0, match.start(3)) + 1,
                      '\n'.join(line[indent:] for line in lines)))
    return sorted(found)


def commands(blocks):
    """[(where, command, expected output)] of a page's blocks."""
    found = []
    for first, block in blocks:
        for number, line in enumerate(block.splitlines(), first):
            if line.startswith('$ '):
                found.append(['line %d' % number, line[2:], []])
            elif found and line.strip():
                found[-1][2].append(line)
    return [(where, command, '\n'.join(output))
            for where, command, output in found]


def pages():
    paths = [os.path.join(ROOT, 'README.md')] + sorted(
        glob.glob(os.path.join(ROOT, 'doc', 'source', '**', '*.rst'),
                  recursive=True) +
        glob.glob(os.path.join(ROOT, 'doc', 'source', '**', '*.md'),
                  recursive=True))
    return [os.path.relpath(path, ROOT) for path in paths
            if console_blocks(path)]


def run_session(session, api, workdir):
    """[(command's output, its exit status)] of running ``session``'s
    commands one after the other in one bash."""
    script = []
    for index, (_where, command, _expected) in enumerate(session):
        command = command.replace(ADDRESS, api.url).replace(
            CONFIG, api.config)
        script.append(command)
        script.append('status=$?; echo; echo "%s"'
                      % MARKER % (index, '$status'))
    environ = dict(os.environ)
    environ['PATH'] = '%s:%s' % (os.path.dirname(sys.executable),
                                 environ.get('PATH', ''))
    environ['HOME'] = str(workdir)
    done = subprocess.run(['bash', '--noprofile', '--norc'],
                          input='\n'.join(script) + '\n', cwd=str(workdir),
                          env=environ, capture_output=True, text=True,
                          timeout=600)
    outputs, start = [], 0
    for index, match in enumerate(_MARKED.finditer(done.stdout)):
        assert int(match.group(1)) == index, (match.group(0), done.stderr)
        outputs.append((done.stdout[start:match.start()].strip('\n'),
                        int(match.group(2))))
        start = match.end()
    assert len(outputs) == len(session), (done.stdout[start:], done.stderr)
    return outputs, done.stderr


def test_the_readme_has_a_tour():
    assert 'README.md' in pages()
    assert len(commands(console_blocks(os.path.join(ROOT, 'README.md')))) \
        >= 10


@pytest.mark.parametrize('page', pages())
def test_a_page_runs_as_written(page, tmp_path):
    session = commands(console_blocks(os.path.join(ROOT, page)))
    api = served.ServedPlacement(tmp_path / 'api').start()
    try:
        outputs, errors = run_session(session, api, tmp_path)
    finally:
        api.stop()
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for (where, command, expected), (got, status) in zip(session, outputs):
        assert status == 0, '%s:%s: %s exited %d\n%s\n%s' % (
            page, where, command, status, got, errors)
        assert checker.check_output(expected + '\n', got + '\n', flags), (
            '%s:%s: %s\nexpected:\n%s\ngot:\n%s'
            % (page, where, command, expected, got))
