"""JSON schemas per resource and microversion.

Each later schema is derived from the one before it with ``derive`` so the
difference between microversions reads as a diff.
"""
import copy


def derive(base, add_properties=None, drop_properties=(), required=None):
    schema = copy.deepcopy(base)
    for name in drop_properties:
        schema['properties'].pop(name, None)
    for name, prop in (add_properties or {}).items():
        schema['properties'][name] = copy.deepcopy(prop)
    if required is not None:
        schema['required'] = list(required)
    return schema


def by_version(req, table):
    """Pick the schema for the request's microversion.

    ``table`` is a list of ((major, minor), schema), oldest first.
    """
    chosen = None
    for version, schema in table:
        if req.version.matches(version):
            chosen = schema
    return chosen
