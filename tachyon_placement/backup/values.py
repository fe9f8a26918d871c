"""What a backup's records may hold: the API's rules for the values it
accepts (schemas/), checked on every record before anything is restored.

A restore writes the graph as the file says, around the API: without
these, a provider uuid ``not-a-uuid``, a generation ``"evil"`` and an
inventory total of 2**64 were restored (exit 0) and served.  Properties
of the labels and relationships Placement defines are held to the API's
rules; every property anywhere must be a value both engines keep (no
object, integers within 64 bits, finite numbers, strings and lists
bounded).
"""
import math

import jsonschema

from tachyon_placement.schemas import common

# A string property's longest (a stored Cypher scorer or topology
# document is far shorter), and a list's.
MAX_STRING = 65536
MAX_LIST = 10000
INT64 = 2 ** 63 - 1

_UUID = {'type': 'string', 'pattern': common.UUID_PATTERN}
_GENERATION = {'type': 'integer', 'minimum': 0, 'maximum': INT64}
_RC = {'type': 'string', 'pattern': common.RC_PATTERN, 'maxLength': 255}
_EXTERNAL_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}


def _bounded(minimum):
    return {'type': 'integer', 'minimum': minimum,
            'maximum': common.MAX_INT}


def _object(required, **properties):
    return {'type': 'object', 'properties': properties,
            'required': list(required)}


NODES = {
    'ResourceProvider': _object(
        ('uuid', 'name', 'generation'), uuid=_UUID,
        name={'type': 'string', 'minLength': 1, 'maxLength': 200},
        generation=_GENERATION),
    'ResourceClass': _object(('name',), name=_RC),
    'Trait': _object(('name',), name=_RC),
    'Aggregate': _object(('uuid',), uuid=_UUID),
    'Consumer': _object(
        ('uuid', 'generation'), uuid=_UUID, generation=_GENERATION,
        project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID, consumer_type=_RC),
    'ConsumerType': _object(('name',), name=_RC),
}
RELATIONSHIPS = {
    'PROVIDES': _object(
        ('total',), total=_bounded(1), reserved=_bounded(0),
        min_unit=_bounded(1), max_unit=_bounded(1), step_size=_bounded(1),
        allocation_ratio={'type': 'number', 'exclusiveMinimum': 0,
                          'maximum': common.SQL_SP_FLOAT_MAX}),
    'CONSUMES': _object(('resource_class', 'used'), resource_class=_RC,
                        used=_bounded(1)),
}
HEADER = _object(
    ('schema_version', 'graph_version', 'taken_at'),
    schema_version={'type': 'integer', 'minimum': 0, 'maximum': 10 ** 6},
    graph_version=_GENERATION, taken_at={'type': 'string', 'maxLength': 64},
    engine={'type': 'string', 'maxLength': 64},
    tachyon={'type': 'string', 'maxLength': 256})

_VALIDATORS = {name: jsonschema.Draft202012Validator(schema)
               for name, schema in dict(NODES, **RELATIONSHIPS).items()}
_HEADER = jsonschema.Draft202012Validator(HEADER)


def _first_error(validator, document):
    error = next(iter(sorted(validator.iter_errors(document),
                             key=lambda found: list(found.path))), None)
    if error is None:
        return None
    where = '.'.join(str(part) for part in error.path)
    return '%s%s' % ('%s: ' % where if where else '', error.message[:200])


def header_problem(header):
    """Why ``header`` cannot be restored, or None."""
    return _first_error(_HEADER, header)


def problem(name, properties):
    """Why the properties of a node labelled ``name`` (or a relationship
    of type ``name``) cannot be restored, or None."""
    for key, value in properties.items():
        why = _value_problem(value)
        if why:
            return '%s: %s' % (key[:64], why)
    validator = _VALIDATORS.get(name)
    return _first_error(validator, properties) if validator else None


def _value_problem(value, nested=False):
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if -INT64 - 1 <= value <= INT64 else (
            'an integer past 64 bits')
    if isinstance(value, float):
        return None if math.isfinite(value) else 'not a finite number'
    if isinstance(value, str):
        return None if len(value) <= MAX_STRING else (
            'a string longer than %d characters' % MAX_STRING)
    if isinstance(value, list) and not nested:
        if len(value) > MAX_LIST:
            return 'a list longer than %d items' % MAX_LIST
        for item in value:
            why = _value_problem(item, nested=True)
            if why:
                return why
        return None
    return 'not a value a graph property holds (%s)' % type(value).__name__
