"""Inventory rules without a database: defaults, capacity, in use."""
import pytest

from tachyon_placement.domain import errors
from tachyon_placement.domain import inventory as domain
from tachyon_placement.domain import models

RP = 'c9ea0435-a707-43ae-8a29-db1dc44b7bf7'


def current(**classes):
    """{class: Inventory} in the order given, as the store returns it."""
    return {rc: models.Inventory(rc, **fields)
            for rc, fields in classes.items()}


def test_make_inventory_fills_placement_defaults():
    inv = domain.make_inventory('DISK_GB', {'total': 10})
    assert inv.resource_class == 'DISK_GB'
    assert inv.as_dict() == {
        'total': 10, 'reserved': 0, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 1.0}


def test_make_inventory_ignores_other_keys_and_keeps_given_values():
    inv = domain.make_inventory('VCPU', {
        'total': 8, 'reserved': 1, 'allocation_ratio': 16,
        'resource_provider_generation': 4, 'resource_class': 'VCPU'})
    assert inv.reserved == 1
    assert inv.allocation_ratio == 16
    assert not hasattr(inv, 'resource_provider_generation')


def test_capacity_truncates_like_placement():
    inv = domain.make_inventory('VCPU', {'total': 3, 'reserved': 1,
                                         'allocation_ratio': 1.5})
    assert domain.capacity(inv) == 3
    inv = domain.make_inventory('VCPU', {'total': 3, 'allocation_ratio': 0.3})
    assert domain.capacity(inv) == 0


@pytest.mark.parametrize('reserved', [253, 512])
def test_reserved_at_or_above_total_is_refused_before_1_26(reserved):
    inv = domain.make_inventory('IPV4_ADDRESS', {'total': 253,
                                                 'reserved': reserved})
    with pytest.raises(domain.InvalidCapacity) as caught:
        domain.check_capacity(RP, [inv], reserved_can_be_total=False)
    assert caught.value.message == (
        "Invalid inventory for 'IPV4_ADDRESS' on resource provider '%s'. "
        "The reserved value is greater than or equal to total." % RP)


def test_reserved_equal_to_total_is_allowed_from_1_26():
    inv = domain.make_inventory('IPV4_ADDRESS', {'total': 253,
                                                 'reserved': 253})
    domain.check_capacity(RP, [inv], reserved_can_be_total=True)


def test_reserved_above_total_is_refused_from_1_26():
    inv = domain.make_inventory('IPV4_ADDRESS', {'total': 253,
                                                 'reserved': 512})
    with pytest.raises(domain.InvalidCapacity) as caught:
        domain.check_capacity(RP, [inv], reserved_can_be_total=True)
    assert caught.value.message.endswith(
        'The reserved value is greater than total.')


def test_zero_allocation_ratio_is_zero_capacity():
    inv = domain.make_inventory('VCPU', {'total': 4, 'allocation_ratio': 0})
    with pytest.raises(domain.InvalidCapacity):
        domain.check_capacity(RP, [inv], reserved_can_be_total=False)
    domain.check_capacity(RP, [inv], reserved_can_be_total=True)


def test_first_invalid_record_in_request_order_is_reported():
    records = [domain.make_inventory('VCPU', {'total': 4}),
               domain.make_inventory('DISK_GB', {'total': 4, 'reserved': 9}),
               domain.make_inventory('MEMORY_MB', {'total': 4,
                                                   'reserved': 9})]
    with pytest.raises(domain.InvalidCapacity) as caught:
        domain.check_capacity(RP, records, reserved_can_be_total=False)
    assert caught.value.resource_class == 'DISK_GB'


def test_non_numeric_records_are_left_to_the_class_check():
    junk = domain.make_inventory('house', {'total': 'x'})
    empty = domain.make_inventory('house', {})
    domain.check_capacity(RP, [junk, empty], reserved_can_be_total=False)


def test_min_max_step_do_not_bound_the_inventory_itself():
    # Placement only checks them against allocation amounts.
    inv = domain.make_inventory('DISK_GB', {'total': 10, 'min_unit': 50,
                                            'max_unit': 20, 'step_size': 7})
    domain.check_capacity(RP, [inv], reserved_can_be_total=False)


def test_plan_add_refuses_an_existing_class():
    have = current(VCPU=dict(total=4))
    with pytest.raises(domain.InventoryExists):
        domain.plan_add(RP, have, domain.make_inventory('VCPU', {'total': 8}))
    change = domain.plan_add(RP, have,
                             domain.make_inventory('DISK_GB', {'total': 8}))
    assert [i.resource_class for i in change.upserts] == ['DISK_GB']
    assert change.deletes == ()


def test_plan_update_needs_the_class():
    have = current(VCPU=dict(total=4))
    with pytest.raises(domain.NoInventory) as caught:
        domain.plan_update(RP, have,
                           domain.make_inventory('MEMORY_MB', {'total': 8}))
    assert caught.value.message == 'No inventory of class MEMORY_MB found.'
    assert isinstance(caught.value, errors.NotFound)


def test_plan_replace_adds_updates_and_deletes():
    have = current(VCPU=dict(total=4), DISK_GB=dict(total=10),
                   MEMORY_MB=dict(total=512))
    wanted = [domain.make_inventory('VCPU', {'total': 8}),
              domain.make_inventory('IPV4_ADDRESS', {'total': 2})]
    change = domain.plan_replace(RP, have, wanted)
    assert [i.resource_class for i in change.upserts] == [
        'VCPU', 'IPV4_ADDRESS']
    assert change.deletes == ('DISK_GB', 'MEMORY_MB')


def test_plan_replace_refuses_to_drop_classes_in_use_listed_in_order():
    have = current(VCPU=dict(total=10, used=7), MEMORY_MB=dict(total=512),
                   DISK_GB=dict(total=2048, used=1020))
    with pytest.raises(domain.InventoryInUse) as caught:
        domain.plan_replace(RP, have, [])
    assert caught.value.message == (
        "Inventory for 'VCPU, DISK_GB' on resource provider '%s' in use."
        % RP)
    assert isinstance(caught.value, errors.InUse)


def test_plan_replace_may_shrink_below_usage():
    have = current(VCPU=dict(total=10, used=7))
    smaller = domain.make_inventory('VCPU', {'total': 2})
    change = domain.plan_replace(RP, have, [smaller])
    assert change.deletes == ()
    assert domain.over_capacity(have, [smaller]) == ['VCPU']
    assert domain.over_capacity(
        have, [domain.make_inventory('VCPU', {'total': 7})]) == []


def test_plan_replace_with_nothing_on_an_empty_provider():
    change = domain.plan_replace(RP, {}, [])
    assert change == domain.InventoryWrite()


def test_plan_delete():
    have = current(VCPU=dict(total=10, used=1), DISK_GB=dict(total=5))
    with pytest.raises(domain.InventoryInUse) as caught:
        domain.plan_delete(RP, have, 'VCPU')
    assert caught.value.message == (
        "Inventory for 'VCPU' on resource provider '%s' in use." % RP)
    with pytest.raises(domain.NoInventory):
        domain.plan_delete(RP, have, 'MEMORY_MB')
    assert domain.plan_delete(RP, have, 'DISK_GB').deletes == ('DISK_GB',)


def test_upsert_params_store_a_float_ratio():
    change = domain.InventoryWrite(upserts=(
        domain.make_inventory('VCPU', {'total': 8, 'allocation_ratio': 16}),))
    assert change.upsert_params() == [{
        'resource_class': 'VCPU', 'total': 8, 'reserved': 0, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 16.0}]
    assert isinstance(change.upsert_params()[0]['allocation_ratio'], float)


def test_usages_cover_every_inventory():
    have = current(VCPU=dict(total=10, used=7), DISK_GB=dict(total=5))
    assert domain.usages(have) == {'VCPU': 7, 'DISK_GB': 0}
    assert domain.usages({}) == {}


def test_last_modified_is_the_newest_stamp():
    early = models.from_millis(1000)
    late = models.from_millis(2000)
    records = [models.Inventory('VCPU', 1, created_at=early),
               models.Inventory('DISK_GB', 1, created_at=early,
                                updated_at=late)]
    assert domain.last_modified(records) == late
    assert domain.last_modified([]) is None
