from tachyon_placement.schemas import common

POST_RC_V1_2 = {
    'type': 'object',
    'properties': {
        'name': {
            'type': 'string',
            'pattern': common.CUSTOM_RC_PATTERN,
            'maxLength': 255,
        },
    },
    'required': ['name'],
    'additionalProperties': False,
}

PUT_RC_V1_2 = POST_RC_V1_2
