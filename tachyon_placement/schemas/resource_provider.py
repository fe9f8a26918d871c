from tachyon_placement.schemas import common
from tachyon_placement.schemas import derive

POST_RP_V1_0 = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'maxLength': 200},
        'uuid': common.UUID,
    },
    'required': ['name'],
    'additionalProperties': False,
}
_PARENT = {'anyOf': [common.UUID, {'type': 'null'}]}
POST_RP_V1_14 = derive(POST_RP_V1_0,
                       add_properties={'parent_provider_uuid': _PARENT})
POST_RP = [((1, 0), POST_RP_V1_0), ((1, 14), POST_RP_V1_14)]

PUT_RP = [((1, 0), derive(POST_RP_V1_0, drop_properties=['uuid'])),
          ((1, 14), derive(POST_RP_V1_14, drop_properties=['uuid']))]

GET_RPS_V1_0 = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'uuid': common.UUID,
    },
    'additionalProperties': False,
}
GET_RPS_V1_3 = derive(GET_RPS_V1_0,
                      add_properties={'member_of': {'type': 'string'}})
GET_RPS_V1_4 = derive(GET_RPS_V1_3,
                      add_properties={'resources': {'type': 'string'}})
GET_RPS_V1_14 = derive(GET_RPS_V1_4, add_properties={'in_tree': common.UUID})
GET_RPS_V1_18 = derive(GET_RPS_V1_14,
                       add_properties={'required': {'type': 'string'}})
GET_RPS = [((1, 0), GET_RPS_V1_0), ((1, 3), GET_RPS_V1_3),
           ((1, 4), GET_RPS_V1_4), ((1, 14), GET_RPS_V1_14),
           ((1, 18), GET_RPS_V1_18)]
