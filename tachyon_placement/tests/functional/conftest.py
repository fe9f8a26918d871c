"""Fixtures shared by the functional tests."""
import pytest

from tachyon_placement.tests.functional.fixtures import gabbits


@pytest.fixture
def service():
    """A Tachyon application on the engine under test, with a seed
    client (gabbits.APIFixture), stopped afterwards."""
    fixture = gabbits.APIFixture()
    fixture.start_fixture()
    yield fixture
    fixture.stop_fixture()
