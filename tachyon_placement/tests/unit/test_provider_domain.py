"""domain.providers: select() is matches() over many views, whatever the
filters and inventories (unit sizes, steps, fractional ratios, usage at
the edge of capacity)."""
import dataclasses
import random

from tachyon_placement.domain import models
from tachyon_placement.domain import providers as domain

CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB']
TRAITS = ['T%d' % i for i in range(5)]
AGGS = ['a%d' % i for i in range(4)]


@dataclasses.dataclass
class View:
    traits: frozenset
    aggregates: frozenset
    inventories: dict


def _inventory(rng, rc):
    total = rng.randrange(1, 40)
    reserved = rng.randrange(0, 3)
    ratio = rng.choice([1.0, 1.5, 4.0, 0.7, 16.0 / 3])
    capacity = int((total - reserved) * ratio)
    return models.Inventory(
        resource_class=rc, total=total, reserved=reserved,
        min_unit=rng.choice([1, 1, 2]), max_unit=rng.choice([total, 4, 64]),
        step_size=rng.choice([1, 1, 2, 3]), allocation_ratio=ratio,
        # Often exactly at, or one below, what the capacity allows.
        used=max(0, rng.choice([0, capacity - rng.randrange(0, 4),
                                rng.randrange(0, 50)])))


def random_filters(rng, classes, traits, aggregates):
    """Random ProviderFilters over these names (also test_world.py's)."""
    return domain.ProviderFilters(
        resources={rc: rng.randrange(1, 9)
                   for rc in rng.sample(classes, rng.randrange(
                       len(classes) + 1))},
        required_traits=[set(rng.sample(traits, rng.randrange(1, 3)))
                         for _ in range(rng.randrange(3))],
        forbidden_traits=set(rng.sample(traits, rng.randrange(2))),
        member_of=[set(rng.sample(aggregates, rng.randrange(1, 3)))
                   for _ in range(rng.randrange(2))],
        forbidden_aggregates=set(rng.sample(aggregates, rng.randrange(2))))


def test_select_is_matches_over_every_view():
    rng = random.Random(7)
    views = [View(frozenset(rng.sample(TRAITS, rng.randrange(4))),
                  frozenset(rng.sample(AGGS, rng.randrange(3))),
                  {rc: _inventory(rng, rc)
                   for rc in rng.sample(CLASSES, rng.randrange(4))})
             for _ in range(300)]
    kept = 0
    for _case in range(500):
        filters = random_filters(rng, CLASSES, TRAITS, AGGS)
        selected = domain.select(views, filters)
        assert selected == [view for view in views
                            if domain.matches(view, filters)]
        kept += 0 < len(selected) < len(views)
    # The cases did both keep and drop views.
    assert kept > 100


def test_capacity_is_computed_once_and_not_compared():
    inventory = models.Inventory(resource_class='VCPU', total=10, reserved=2,
                                 allocation_ratio=1.5, used=3)
    assert inventory.capacity == 12.0
    assert dataclasses.replace(inventory, total=20).capacity == 27.0
    assert inventory == models.Inventory(
        resource_class='VCPU', total=10, reserved=2, allocation_ratio=1.5,
        used=3)
    assert domain.has_capacity(inventory, 9)
    assert not domain.has_capacity(inventory, 10)
