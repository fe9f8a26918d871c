"""Free-text provider names on the engine, and the schema migration.

FalkorDB's string index trims blanks at both ends of a value when it
indexes it, and its unique-constraint check crashed the server on such
values; the store keys names by ``schema.name_key``.  These tests run the
store on the suite's engine with names made to hit exactly that.
"""
import random
import uuid

import pytest

from tachyon_placement.domain import errors
from tachyon_placement.graph import schema
from tachyon_placement import deploy
from tachyon_placement.tests.functional.fixtures import engine as engines

# Blanks of every kind C's isspace() knows, separators and specials of
# RediSearch's query syntax, non-ASCII blanks.
ALPHABET = ' \t\n\r\x0b\x0c,;|{}[]()*@:-_.aA\u00a0\u3000\u00e9\'"\\%$<>'


@pytest.fixture
def store():
    engine = engines.new_engine()
    graph = deploy.compose(engine)
    graph.sync()
    yield graph
    engines.drop_engine(engine)


def _names(count, seed=7):
    rnd = random.Random(seed)
    names = set()
    while len(names) < count:
        names.add(''.join(rnd.choice(ALPHABET)
                          for _ in range(rnd.randint(0, 6))))
    return sorted(names)


def test_names_are_stored_and_unique_exactly(store):
    names = _names(150)
    made = {name: store.providers.create(str(uuid.uuid4()), name)
            for name in names}
    for name, provider in made.items():
        assert provider.name == name
        assert store.providers.get(provider.uuid).name == name
        with pytest.raises(errors.Exists) as caught:
            store.providers.create(str(uuid.uuid4()), name)
        assert caught.value.field == 'name'
    # The engine process survived every one of them.
    assert store.providers.get(made[names[0]].uuid).name == names[0]


def test_rename_moves_the_key(store):
    first = store.providers.create(str(uuid.uuid4()), ' a')
    second = store.providers.create(str(uuid.uuid4()), 'a')
    renamed = store.providers.update(first, 'a ', None)
    assert renamed.name == 'a '
    # ' a' is free again, 'a ' and 'a' are taken.
    store.providers.create(str(uuid.uuid4()), ' a')
    with pytest.raises(errors.Exists):
        store.providers.update(second, 'a ', None)
    parent = store.providers.create(str(uuid.uuid4()), 'parent')
    with pytest.raises(errors.Exists):
        store.providers.update(second, 'a ', parent.uuid)
    assert store.providers.get(second.uuid).parent_uuid is None


def test_sync_migrates_providers_without_name_keys(store):
    """A graph written before name_key: sync backfills the keys, after
    which lookups and uniqueness work on the old providers."""
    made = store.providers.create(str(uuid.uuid4()), 'old-host')
    strip = _STRIP_NAME_KEY
    store.engine.write(strip, uuid=made.uuid)
    store.sync()
    store.sync()  # idempotent
    with pytest.raises(errors.Exists):
        store.providers.create(str(uuid.uuid4()), 'old-host')
    rows = store.engine.read(_NAME_KEY, uuid=made.uuid)
    assert rows == [{'key': schema.name_key('old-host')}]


_STRIP_NAME_KEY = schema.Statement('test_strip_name_key', common='''
MATCH (rp:ResourceProvider {uuid: $uuid}) REMOVE rp.name_key
''')
_NAME_KEY = schema.Statement('test_name_key', common='''
MATCH (rp:ResourceProvider {uuid: $uuid}) RETURN rp.name_key AS key
''')


@pytest.mark.skipif(engines.NEO4J_URI is not None,
                    reason='FalkorDB only: the crashing constraint')
def test_sync_drops_the_old_falkordb_name_constraint(store):
    graph = store.engine._graph
    graph.create_node_unique_constraint('ResourceProvider', 'name')
    store.sync()
    assert not [c for c in graph.list_constraints()
                if c['label'] == 'ResourceProvider'
                and c['properties'] == ['name']]
    # This crashed the server while the constraint existed.
    assert store.providers.create(str(uuid.uuid4()), ' a').name == ' a'
