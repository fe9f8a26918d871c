import copy

from tachyon_placement.schemas import allocation
from tachyon_placement.schemas import common
from tachyon_placement.schemas import inventory


def _reshaper(post_allocations):
    allocations = copy.deepcopy(post_allocations)
    allocations['minProperties'] = 0
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {
                    common.UUID_PATTERN: inventory.PUT_INVENTORIES,
                },
                # Nothing to reshape without at least one provider.
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': allocations,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


_POST = dict(allocation.POST)
POST_RESHAPER = [((1, 30), _reshaper(_POST[(1, 28)])),
                 ((1, 34), _reshaper(_POST[(1, 34)])),
                 ((1, 38), _reshaper(_POST[(1, 38)]))]
