"""Allocation bodies: PUT /allocations/{uuid} and POST /allocations."""
import copy

from tachyon_placement.schemas import common
from tachyon_placement.schemas import derive

_AMOUNTS = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        common.RC_PATTERN: {'type': 'integer', 'minimum': 1},
    },
    'additionalProperties': False,
}
_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_GENERATION = {'type': ['integer', 'null'], 'additionalProperties': False}

# 1.0: a list of {resource_provider: {uuid}, resources}.
PUT_V1_0 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {'uuid': common.UUID},
                        'additionalProperties': False,
                        'required': ['uuid'],
                    },
                    'resources': _AMOUNTS,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}
PUT_V1_8 = derive(PUT_V1_0, add_properties={'project_id': _ID,
                                            'user_id': _ID},
                  required=['allocations', 'project_id', 'user_id'])

# 1.12: a dict keyed by provider uuid, as GET renders it.
PUT_V1_12 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'minProperties': 1,
            'patternProperties': {
                common.UUID_PATTERN: {
                    'type': 'object',
                    'properties': {
                        'generation': {'type': 'integer'},
                        'resources': _AMOUNTS,
                    },
                    'required': ['resources'],
                    'additionalProperties': False,
                },
            },
            'additionalProperties': False,
        },
        'project_id': _ID,
        'user_id': _ID,
    },
    'additionalProperties': False,
    'required': ['allocations', 'project_id', 'user_id'],
}
# An empty allocations dict means "remove this consumer's allocations".
DELETABLE_V1_13 = copy.deepcopy(PUT_V1_12)
DELETABLE_V1_13['properties']['allocations']['minProperties'] = 0

PUT_V1_28 = derive(DELETABLE_V1_13,
                   add_properties={'consumer_generation': _GENERATION},
                   required=PUT_V1_12['required'] + ['consumer_generation'])
_MAPPINGS = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        common.GROUP_PAT_1_33: {
            'type': 'array', 'minItems': 1,
            'items': {'type': 'string', 'format': 'uuid'},
        },
    },
}
PUT_V1_34 = derive(PUT_V1_28, add_properties={'mappings': _MAPPINGS})
PUT_V1_38 = derive(
    PUT_V1_34,
    add_properties={'consumer_type': {
        'type': 'string', 'pattern': common.CONSUMER_TYPE_PATTERN,
        'minLength': 1, 'maxLength': 255}},
    required=PUT_V1_34['required'] + ['consumer_type'])

PUT = [((1, 0), PUT_V1_0), ((1, 8), PUT_V1_8), ((1, 12), PUT_V1_12),
       ((1, 28), PUT_V1_28), ((1, 34), PUT_V1_34), ((1, 38), PUT_V1_38)]


def _by_consumer(per_consumer):
    return {
        'type': 'object',
        'minProperties': 1,
        'additionalProperties': False,
        'patternProperties': {common.UUID_PATTERN: per_consumer},
    }


POST = [((1, 13), _by_consumer(DELETABLE_V1_13)),
        ((1, 28), _by_consumer(PUT_V1_28)),
        ((1, 34), _by_consumer(PUT_V1_34)),
        ((1, 38), _by_consumer(PUT_V1_38))]
