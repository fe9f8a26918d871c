"""Placement's own API suite, run against Tachyon.

The gabbi YAML files ship inside the openstack-placement wheel (a test-only
dependency); they are loaded from the installed package, never copied.
Each file is one pytest item that runs all of that file's tests in order
with our fixtures; the per-file and total counts are printed at the end of
the run (see conftest.py) and written to ``upstream-gabbi-results.json``.
"""
import importlib.util
import os
import unittest

from gabbi import driver
import pytest

from tachyon_placement.tests.functional.fixtures import gabbits as fixtures

UPSTREAM_TOTAL = 1316

# Files that need work tracked by later issues.  They run and are counted;
# a failure here is expected until that issue lands, a pass is reported.
LATER = {}


def gabbits_dir():
    spec = importlib.util.find_spec('placement')
    if spec is None:
        raise RuntimeError('openstack-placement (test-only dependency) is '
                           'not installed')
    return os.path.join(os.path.dirname(spec.origin), 'tests', 'functional',
                        'gabbits')


def yaml_files():
    return sorted(name[:-5] for name in os.listdir(gabbits_dir())
                  if name.endswith('.yaml'))


RESULTS = {}


class _Collecting(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.passed = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.append(test)


@pytest.fixture(scope='module')
def suites_by_file():
    """Build every file's GabbiSuite once: {file name: suite}."""
    suite = driver.build_tests(
        gabbits_dir(), unittest.TestLoader(), host=None,
        intercept=fixtures.setup_app, test_loader_name=__name__,
        fixture_module=fixtures, use_prior_test=True, safe_yaml=True)
    files = yaml_files()
    by_file = {}
    for file_suite in suite:
        tests = list(file_suite)
        if not tests:
            continue
        # gabbi names each case "<file>_<test name>"; file names never
        # contain "_", so the text before the first "_" is the file.
        class_name = tests[0].__class__.__name__
        name = class_name.split('_', 1)[0]
        assert name in files, class_name
        by_file[name] = file_suite
    return by_file


@pytest.mark.parametrize('name', yaml_files())
def test_upstream_gabbi_file(name, suites_by_file, request):
    if name in LATER:
        request.applymarker(pytest.mark.xfail(reason=LATER[name],
                                              strict=False))
    suite = suites_by_file[name]
    result = _Collecting()
    suite.run(result)
    total = suite.countTestCases()
    failures = result.failures + result.errors
    RESULTS[name] = {
        'total': total,
        'passed': len(result.passed),
        'failed': len(failures),
        'skipped': len(result.skipped),
        'failures': [(test.id(), text.strip().splitlines()[-1][:300])
                     for test, text in failures],
    }
    if failures or result.skipped:
        details = '\n'.join('%s\n%s' % (test.id(), text[-2000:])
                            for test, text in failures[:5])
        pytest.fail('%s: %d of %d upstream tests failed, %d skipped\n%s' % (
            name, len(failures), total, len(result.skipped), details),
            pytrace=False)
