"""Fixtures shared by the functional tests."""
import pytest

from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional.fixtures import gabbits
from tachyon_placement.tests.functional import served


@pytest.fixture
def service():
    """A Tachyon application on the engine under test, with a seed
    client (gabbits.APIFixture), stopped afterwards."""
    fixture = gabbits.APIFixture()
    fixture.start_fixture()
    yield fixture
    fixture.stop_fixture()


@pytest.fixture
def api(tmp_path):
    """tachyon-placement-api served by its console script on the engine
    under test (served.ServedPlacement), stopped afterwards."""
    service = served.ServedPlacement(tmp_path / 'api').start()
    yield service
    service.stop()


@pytest.fixture
def seeded_primary():
    """A graph of its own on the FalkorDB server under test holding one
    node, ``(:Seed {name: "seed"})``, for its replicas to copy; dropped
    afterwards."""
    engine = engines.new_engine()
    engine._graph.query('CREATE (:Seed {name: "seed"})')
    yield engine
    engines.drop_engine(engine)
