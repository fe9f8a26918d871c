"""JSON schemas of Tachyon's /tachyon/weighers (API version 1.0)."""
from tachyon_placement.schemas import common

_CLASS = {'type': 'string', 'pattern': '^[A-Z0-9_]{1,255}$'}
_NAMES = {'type': 'array', 'uniqueItems': True, 'maxItems': 64,
          'items': {'type': 'string', 'pattern': '^[A-Z0-9_]{1,255}$'}}
_UUIDS = {'type': 'array', 'uniqueItems': True, 'maxItems': 64,
          'items': {'type': 'string', 'format': 'uuid'}}


# Hosts past a bound of the measured value (a usage share 0..1, a
# metric's value, a Cypher score) are left out: hard, or soft (only while
# another host can take the request).
THRESHOLD = {
    'type': 'object',
    'properties': {'min': {'type': 'number'}, 'max': {'type': 'number'},
                   'mode': {'enum': ['hard', 'soft']}},
    'minProperties': 1,
    'additionalProperties': False,
}
NORMALIZE = {'enum': ['minmax', 'rank']}
# {resource class: what a unit placed on a host adds to its metric value
# until the next sample (e.g. VCPU: 12.5 for a CPU percentage of 8 CPUs)}.
PLACED_LOAD = {'type': 'object', 'maxProperties': 16,
               'propertyNames': {'pattern': '^[A-Z0-9_]{1,255}$'},
               'additionalProperties': {'type': 'number', 'minimum': -1e9,
                                        'maximum': 1e9}}
MISSING = {'enum': ['worst', 'best', 'neutral', 'exclude']}


def _scorer(kind, properties, required=()):
    return {
        'type': 'object',
        'properties': dict(properties, type={'const': kind}),
        'required': ['type'] + list(required),
        'additionalProperties': False,
    }


SCORER = {'oneOf': [
    _scorer('usage', {'resource_class': _CLASS,
                      'mode': {'enum': ['pack', 'spread']},
                      'threshold': THRESHOLD, 'normalize': NORMALIZE},
            required=['resource_class']),
    _scorer('traits', {'prefer': _NAMES, 'avoid': _NAMES}),
    _scorer('aggregates', {'prefer': _UUIDS, 'avoid': _UUIDS}),
    _scorer('metric', {'metric': {'type': 'string',
                                  'pattern': common.TACHYON_NAME_PATTERN},
                       'higher_is_better': {'type': 'boolean'},
                       'missing': MISSING, 'normalize': NORMALIZE,
                       'threshold': THRESHOLD, 'placed_load': PLACED_LOAD},
            required=['metric']),
    # A read-only query returning the columns uuid and score; checked by
    # the engine when stored.
    _scorer('cypher', {'query': {'type': 'string', 'minLength': 1,
                                 'maxLength': 8192},
                       'higher_is_better': {'type': 'boolean'},
                       'missing': MISSING, 'normalize': NORMALIZE,
                       'threshold': THRESHOLD},
            required=['query']),
]}

MATCH = {
    'type': 'object',
    'properties': {
        'resource_classes': _NAMES,
        'required_traits': _NAMES,
        'member_of': _UUIDS,
        'min_groups': {'type': 'integer', 'minimum': 1, 'maximum': 1000},
        'max_groups': {'type': 'integer', 'minimum': 1, 'maximum': 1000},
    },
    'additionalProperties': False,
}

PUT = {
    'type': 'object',
    'properties': {
        # A multiplier, as Nova's weighers have; negative inverts.
        'weight': {'type': 'number', 'minimum': -1000000,
                   'maximum': 1000000},
        'scorer': SCORER,
        'match': MATCH,
        # The weigher's generation when replacing it; null or absent when
        # creating it.
        'generation': {'type': ['integer', 'null'], 'minimum': 0,
                       'maximum': common.MAX_INTEGER},
    },
    'required': ['weight', 'scorer'],
    'additionalProperties': False,
}
