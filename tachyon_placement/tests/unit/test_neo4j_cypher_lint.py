"""Every Cypher statement the Neo4j engine can send, checked by Neo4j.

Neo4j itself cannot run on the build machines, so each statement that
``tachyon_placement.graph.cypher.neo4j_statements()`` lists goes through
Neo4j's own Cypher parser and semantic analysis (the npm package
``@neo4j-cypher/language-support``, driven by ``tools/cypher-lint/lint.mjs``)
and must come back without a diagnostic of severity Error.  Deprecation and
other warnings are reported as pytest warnings.

If ``cypher`` also offers ``neo4j_schema()`` returning
``{"labels": [...], "relationshipTypes": [...], "propertyKeys": [...]}``,
the graph model is passed to the linter, which then turns a label,
relationship type or property read by a statement but absent from the model
(a typo, usually) into an error.

Node.js and ``tools/cypher-lint/node_modules`` are installed by
``tools/run-tests.sh``; without them these tests fail, they never skip.
"""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import traceback
import warnings

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
LINT_DIR = REPO / 'tools' / 'cypher-lint'
LINT_SCRIPT = LINT_DIR / 'lint.mjs'
LINT_PACKAGE = (LINT_DIR / 'node_modules' / '@neo4j-cypher' /
                'language-support' / 'package.json')
MIN_NODE_MAJOR = 18
SELFTEST_PREFIX = '__selftest__/'

# Statements the harness must reject: proof that the lint can fail.
MUST_FAIL = {
    'syntax_error': 'MATCH (n:ResourceProvider RETURN n',
    'unknown_function': 'RETURN tachyon_no_such_function(1) AS x',
    'removed_exists_property': (
        'MATCH (n:ResourceProvider) WHERE exists(n.name) RETURN n'),
    'pattern_expression_as_value': (
        'MATCH (n:ResourceProvider) RETURN size((n)-[:PARENT_OF]->()) AS c'),
    'undefined_variable': 'MATCH (n:ResourceProvider) RETURN m.uuid AS uuid',
    'old_index_syntax': 'CREATE INDEX ON :ResourceProvider(uuid)',
    'two_statements': 'RETURN 1 AS one; RETURN 2 AS two',
}
MUST_PASS = {
    'valid_with_parameters': (
        'MATCH (rp:ResourceProvider {uuid: $uuid}) '
        'WHERE rp.generation = $generation '
        'SET rp.generation = rp.generation + 1 '
        'RETURN rp.generation AS generation'),
}


class CypherLintWarning(UserWarning):
    """A non-error diagnostic from Neo4j's Cypher analysis."""


def _load_statements():
    try:
        from tachyon_placement.graph import cypher
        statements = cypher.neo4j_statements()
        schema = None
        if callable(getattr(cypher, 'neo4j_schema', None)):
            schema = cypher.neo4j_schema()
        return statements, schema, None
    except Exception:  # reported by the tests, not at collection
        return {}, None, traceback.format_exc()


STATEMENTS, SCHEMA, LOAD_ERROR = _load_statements()
STATEMENT_NAMES = sorted(STATEMENTS) or ['<no statements>']


def _run_lint(statements, schema=None):
    node = shutil.which('node')
    if node is None:
        pytest.fail('node (Node.js) is not installed: the Cypher lint needs '
                    'it. Run tools/run-tests.sh, which installs it.')
    version = subprocess.run([node, '--version'], capture_output=True,
                             text=True, check=False).stdout.strip()
    try:
        major = int(version.lstrip('v').split('.')[0])
    except ValueError:
        major = 0
    if major < MIN_NODE_MAJOR:
        pytest.fail('node %s is too old for the Cypher lint (need >= %d)'
                    % (version or '?', MIN_NODE_MAJOR))
    if not LINT_PACKAGE.is_file():
        pytest.fail('%s is missing: run tools/run-tests.sh (or `npm ci` in '
                    'tools/cypher-lint)' % LINT_PACKAGE.parent)
    cmd = [node, str(LINT_SCRIPT)]
    with tempfile.TemporaryDirectory() as tmp:
        if schema is not None:
            schema_file = os.path.join(tmp, 'schema.json')
            with open(schema_file, 'w') as f:
                json.dump(schema, f)
            cmd += ['--schema', schema_file]
        proc = subprocess.run(cmd, input=json.dumps(statements),
                              capture_output=True, text=True, cwd=LINT_DIR,
                              timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail('cypher lint exited with %d:\n%s%s'
                    % (proc.returncode, proc.stderr, proc.stdout[-2000:]))
    try:
        return json.loads(proc.stdout)
    except ValueError:
        pytest.fail('cypher lint printed no JSON:\n%s\n%s'
                    % (proc.stdout[-2000:], proc.stderr))


@pytest.fixture(scope='module')
def lint_results():
    """Lint all statements (and the self-test ones) with one node run."""
    batch = dict(STATEMENTS)
    for name, text in list(MUST_FAIL.items()) + list(MUST_PASS.items()):
        batch[SELFTEST_PREFIX + name] = text
    return _run_lint(batch, SCHEMA)


def _describe(text, diagnostics):
    lines = []
    for d in diagnostics:
        start = d.get('offsets', {}).get('start', 0)
        end = d.get('offsets', {}).get('end', start)
        lines.append('  %s at %d-%d: %s\n    >>> %s<<<%s>>>%s'
                     % (d.get('severity'), start, end, d.get('message'),
                        text[max(0, start - 40):start], text[start:end],
                        text[end:end + 40]))
    return '\n'.join(lines)


def _errors(diagnostics):
    return [d for d in diagnostics if d.get('severity') == 'Error']


def test_statements_are_listed():
    assert LOAD_ERROR is None, (
        'cannot list the Neo4j statements:\n%s' % LOAD_ERROR)
    assert STATEMENTS, 'neo4j_statements() returned no statements'
    for name, text in STATEMENTS.items():
        assert isinstance(text, str) and text.strip(), (
            'statement %s has no text' % name)


@pytest.mark.parametrize('name', STATEMENT_NAMES)
def test_neo4j_statement_lints_clean(lint_results, name):
    assert LOAD_ERROR is None, (
        'cannot list the Neo4j statements:\n%s' % LOAD_ERROR)
    assert name in STATEMENTS and name in lint_results, (
        'statement %s was not linted' % name)
    text = STATEMENTS[name]
    diagnostics = lint_results[name]
    errors = _errors(diagnostics)
    assert not errors, (
        'Neo4j rejects statement %s:\n%s\n--- statement ---\n%s'
        % (name, _describe(text, errors), text))
    others = [d for d in diagnostics if d.get('severity') != 'Error']
    if others:
        warnings.warn(CypherLintWarning(
            'statement %s:\n%s' % (name, _describe(text, others))))


@pytest.mark.parametrize('name', sorted(MUST_FAIL))
def test_lint_rejects_broken_statement(lint_results, name):
    diagnostics = lint_results[SELFTEST_PREFIX + name]
    assert _errors(diagnostics), (
        'the Cypher lint reported no error for %r: %s'
        % (MUST_FAIL[name], diagnostics))


@pytest.mark.parametrize('name', sorted(MUST_PASS))
def test_lint_accepts_valid_statement(lint_results, name):
    diagnostics = lint_results[SELFTEST_PREFIX + name]
    assert not _errors(diagnostics), _describe(MUST_PASS[name], diagnostics)
