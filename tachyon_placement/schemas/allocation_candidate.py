"""Query string of GET /allocation_candidates, per microversion.

Query values always arrive as strings; the schemas only decide which keys
exist at a microversion (and the shape of ``limit`` and ``group_policy``).
The value syntax of each key is checked by the handler's parsers.
"""
import copy

from tachyon_placement.schemas import common
from tachyon_placement.schemas import derive

_STRING = {'type': 'string'}

GET_V1_10 = {
    'type': 'object',
    'properties': {'resources': _STRING},
    'required': ['resources'],
    'additionalProperties': False,
}

# limit: a positive integer (webob hands us a string).
GET_V1_16 = derive(GET_V1_10, add_properties={'limit': {
    'type': ['integer', 'string'],
    'pattern': '^[1-9][0-9]*$',
    'minimum': 1,
    'minLength': 1,
}})
GET_V1_17 = derive(GET_V1_16, add_properties={'required': {
    'type': ['string']}})
GET_V1_21 = derive(GET_V1_17, add_properties={'member_of': {
    'type': ['string']}})

_GROUPED = ('resources', 'required', 'member_of')


def _grouped(keys, suffix_pattern):
    return {'^%s(%s)?$' % (key, suffix_pattern): _STRING for key in keys}


# 1.25: resources/required/member_of take an optional numeric suffix (a
# request group each) and group_policy says how the groups interact.
GET_V1_25 = derive(GET_V1_21, drop_properties=_GROUPED,
                   add_properties={'group_policy': {
                       'type': 'string', 'enum': ['none', 'isolate']}})
GET_V1_25.pop('required')
GET_V1_25['patternProperties'] = _grouped(_GROUPED, common.GROUP_PAT)

GET_V1_31 = copy.deepcopy(GET_V1_25)
GET_V1_31['patternProperties'].update(_grouped(('in_tree',),
                                               common.GROUP_PAT))

# 1.33: suffixes may be any 1-64 of [a-zA-Z0-9_-].
GET_V1_33 = copy.deepcopy(GET_V1_31)
GET_V1_33['patternProperties'] = _grouped(
    _GROUPED + ('in_tree',), common.GROUP_PAT_1_33)

GET_V1_35 = derive(GET_V1_33, add_properties={'root_required': {
    'type': ['string']}})
GET_V1_36 = derive(GET_V1_35, add_properties={'same_subtree': {
    'type': ['string']}})

GET = [((1, 10), GET_V1_10), ((1, 16), GET_V1_16), ((1, 17), GET_V1_17),
       ((1, 21), GET_V1_21), ((1, 25), GET_V1_25), ((1, 31), GET_V1_31),
       ((1, 33), GET_V1_33), ((1, 35), GET_V1_35), ((1, 36), GET_V1_36)]
