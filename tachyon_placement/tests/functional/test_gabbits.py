"""Our own gabbi tests: every ``gabbits/*.yaml`` at the top of the repo.

Each YAML test is a pytest item (gabbi's pytest plugin starts a file's
fixtures before its first selected test and stops them after its last).
Fixtures come from ``fixtures.ours``: the upstream fixture names plus ours.
"""
import pathlib

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401 - the parametrized test

from tachyon_placement.tests.functional.fixtures import ours

GABBITS = pathlib.Path(__file__).resolve().parents[3] / 'gabbits'


def pytest_generate_tests(metafunc):
    driver.py_test_generator(
        str(GABBITS), intercept=ours.setup_app, fixture_module=ours,
        test_loader_name=__name__, metafunc=metafunc, safe_yaml=True)
