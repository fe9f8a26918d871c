from tachyon_placement.schemas import common
from tachyon_placement.schemas import derive

_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

GET_USAGES_V1_9 = {
    'type': 'object',
    'properties': {'project_id': _ID, 'user_id': _ID},
    'required': ['project_id'],
    'additionalProperties': False,
}
GET_USAGES_V1_38 = derive(GET_USAGES_V1_9, add_properties={
    'consumer_type': {'type': 'string',
                      'pattern': common.CONSUMER_TYPE_GET_PATTERN,
                      'minLength': 1, 'maxLength': 255}})
GET_USAGES = [((1, 9), GET_USAGES_V1_9), ((1, 38), GET_USAGES_V1_38)]
