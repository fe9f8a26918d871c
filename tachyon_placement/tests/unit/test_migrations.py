"""Which migration steps a graph at a given schema version needs."""
import pytest

from tachyon_placement.graph import migrations
from tachyon_placement.graph import schema


def test_steps_are_in_order_and_end_at_this_release():
    versions = [step.version for step in migrations.STEPS]
    assert versions == sorted(set(versions))
    assert versions[-1] == schema.SCHEMA_VERSION
    assert versions[0] == migrations.UNVERSIONED + 1


def test_a_new_graph_needs_no_step_and_a_current_one_none_either():
    assert migrations.pending(None) == []
    assert migrations.pending(schema.SCHEMA_VERSION) == []


def test_an_unversioned_graph_gets_every_step():
    assert migrations.pending(migrations.UNVERSIONED) == list(
        migrations.STEPS)


def test_steps_stop_at_the_target(monkeypatch):
    monkeypatch.setattr(migrations, 'STEPS', (
        migrations.Step(1, 'one', None), migrations.Step(2, 'two', None),
        migrations.Step(3, 'three', None)))
    assert [s.summary for s in migrations.pending(1, target=3)] == [
        'two', 'three']
    assert [s.summary for s in migrations.pending(0, target=2)] == [
        'one', 'two']


def test_a_newer_graph_is_refused_with_both_versions():
    with pytest.raises(migrations.NewerSchema) as raised:
        migrations.pending(schema.SCHEMA_VERSION + 1)
    assert raised.value.found == schema.SCHEMA_VERSION + 1
    assert raised.value.known == schema.SCHEMA_VERSION
    assert 'newer release' in str(raised.value)
