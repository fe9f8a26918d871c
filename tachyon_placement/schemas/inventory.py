"""Inventory request bodies (the same at every microversion).

One inventory record is a ``total`` and optional limits; a single
inventory PUT also names the provider generation it was read at, a POST
names the resource class instead, and a PUT of the whole set wraps
records keyed by class in ``inventories`` beside the generation.
"""
from tachyon_placement.schemas import common
from tachyon_placement.schemas import derive


def _bounded_integer(minimum):
    return {'type': 'integer', 'minimum': minimum, 'maximum': common.MAX_INT}


INVENTORY = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': _bounded_integer(1),
        'reserved': _bounded_integer(0),
        'min_unit': _bounded_integer(1),
        'max_unit': _bounded_integer(1),
        'step_size': _bounded_integer(1),
        'allocation_ratio': {'type': 'number',
                             'maximum': common.SQL_SP_FLOAT_MAX},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}

# PUT /resource_providers/{uuid}/inventories/{resource_class}
PUT_INVENTORY = INVENTORY

# POST /resource_providers/{uuid}/inventories
POST_INVENTORY = derive(
    INVENTORY,
    add_properties={'resource_class': {'type': 'string',
                                       'pattern': common.RC_PATTERN}},
    required=['total', 'resource_class'])

# PUT /resource_providers/{uuid}/inventories.  Keys that do not look like
# a resource class are not validated here (as in Placement); they fail
# later as unknown resource classes.
_RECORD = derive(INVENTORY, required=['total'])
PUT_INVENTORIES = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {common.RC_PATTERN: _RECORD},
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}
