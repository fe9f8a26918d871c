"""Trait bodies and query strings."""
import copy

from tachyon_placement.schemas import common

TRAIT = {'type': 'string', 'minLength': 1, 'maxLength': 255}

# PUT /traits/{name} validates the name from the URL against this.
CUSTOM_TRAIT = dict(TRAIT, pattern=common.CUSTOM_TRAIT_PATTERN)

# PUT /resource_providers/{uuid}/traits: any existing trait, custom or not.
SET_TRAITS_FOR_RP = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': copy.deepcopy(TRAIT)},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}

LIST_TRAITS = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'associated': {'type': 'string'},
    },
    'additionalProperties': False,
}
