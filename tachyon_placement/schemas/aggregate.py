"""PUT /resource_providers/{uuid}/aggregates bodies."""
import copy

_AGGREGATES = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}

# 1.1-1.18: the bare list of aggregate uuids.
PUT_V1_1 = copy.deepcopy(_AGGREGATES)

# 1.19: the list and the provider generation it was computed from.
PUT_V1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': copy.deepcopy(_AGGREGATES),
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}

PUT = [((1, 1), PUT_V1_1), ((1, 19), PUT_V1_19)]
