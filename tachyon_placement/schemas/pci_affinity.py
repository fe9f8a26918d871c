"""JSON schema of Tachyon's /tachyon/pci_affinity rules (API 1.0); see
topology/affinity.py for what they mean."""
from tachyon_placement.schemas import common
from tachyon_placement.topology import affinity

PUT = {
    'type': 'object',
    'properties': {
        # The devices: those a candidate takes this class from, or those
        # whose provider has this trait (exactly one of the two).
        'resource_class': {'type': 'string', 'pattern': common.RC_PATTERN,
                           'maxLength': 255},
        'trait': {'type': 'string', 'pattern': common.RC_PATTERN,
                  'maxLength': 255},
        'policy': {'enum': list(affinity.POLICIES)},
        'generation': {'type': ['integer', 'null'], 'minimum': 0,
                       'maximum': common.MAX_INTEGER},
    },
    'required': ['policy'],
    'oneOf': [
        {'required': ['resource_class'], 'not': {'required': ['trait']}},
        {'required': ['trait'], 'not': {'required': ['resource_class']}}],
    'additionalProperties': False,
}
