"""Our own gabbi tests: every ``gabbits/*.yaml`` at the top of the repo.

Each YAML test is a pytest item.  A file's fixtures start before its first
selected test and stop when the next file starts (or at the end); a test
selected alone runs the tests before it in its file first, as gabbi does.
Fixtures come from ``fixtures.ours``: the upstream fixture names plus ours.
"""
import pathlib
import unittest

from gabbi import driver
import pytest

from tachyon_placement.tests.functional.fixtures import ours

GABBITS = pathlib.Path(__file__).resolve().parents[3] / 'gabbits'


def _load():
    """({file: GabbiSuite}, {test id: (file, case)}) in file order."""
    suites, cases = {}, {}
    top = driver.build_tests(
        str(GABBITS), unittest.TestLoader(), intercept=ours.setup_app,
        fixture_module=ours, test_loader_name=__name__, safe_yaml=True)
    for file_suite in top:
        tests = list(file_suite)
        if not tests:
            continue
        # gabbi names each case "<file>_<test name>" (no "_" in files).
        name = tests[0].__class__.__name__.split('_', 1)[0]
        suites[name] = file_suite
        for case in tests:
            cases['%s: %s' % (name, case.test_data['name'])] = (name, case)
    return suites, cases


SUITES, CASES = _load()


@pytest.fixture(scope='module')
def running():
    """The file whose fixtures are up: {'name', 'suite'}."""
    state = {'name': None, 'suite': None}
    yield state
    if state['suite'] is not None:
        state['suite'].stop()


@pytest.mark.parametrize('test_id', list(CASES))
def test_gabbi(test_id, running):
    name, case = CASES[test_id]
    if running['name'] != name:
        if running['suite'] is not None:
            running['suite'].stop()
            running.update(name=None, suite=None)
        SUITES[name].start(unittest.TestResult())
        running.update(name=name, suite=SUITES[name])
    result = unittest.TestResult()
    case.run(result)
    failures = result.failures + result.errors
    if failures:
        pytest.fail(failures[0][1], pytrace=False)
    if result.skipped:
        pytest.skip(result.skipped[0][1])
