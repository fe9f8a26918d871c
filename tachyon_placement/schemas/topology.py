"""JSON schema of a host's topology document (PUT
/tachyon/topology/hosts/{name}, Tachyon API 1.0); topology/model.py
explains the fields and checks what a schema cannot."""
from tachyon_placement.schemas import common

_ID = {'type': 'integer', 'minimum': 0, 'maximum': 65535}
_COUNT = {'type': ['integer', 'null'], 'minimum': 0, 'maximum': 2 ** 31 - 1}
_HEX = {'type': 'string', 'pattern': '^[0-9a-fA-F]{4}$'}
_SHORT = {'type': 'string', 'minLength': 1, 'maxLength': 255}

PUT = {
    'type': 'object',
    'properties': {
        'generation': {'type': ['integer', 'null'], 'minimum': 0,
                       'maximum': common.MAX_INTEGER},
        'sockets': {
            'type': 'array', 'maxItems': 64,
            'items': {'type': 'object',
                      'properties': {'id': _ID},
                      'required': ['id'],
                      'additionalProperties': False}},
        'numa_nodes': {
            'type': 'array', 'maxItems': 1024,
            'items': {
                'type': 'object',
                'properties': {
                    'id': _ID,
                    'socket': {'type': ['integer', 'null'], 'minimum': 0,
                               'maximum': 65535},
                    'cpus': {'type': 'array', 'maxItems': 16384,
                             'items': {'type': 'integer', 'minimum': 0,
                                       'maximum': 1048575}},
                    'memory_mb': {'type': 'integer', 'minimum': 0,
                                  'maximum': 2 ** 40},
                    'hugepages': {
                        'type': 'array', 'maxItems': 8,
                        'items': {
                            'type': 'object',
                            'properties': {
                                'size_kb': {'type': 'integer',
                                            'minimum': 1,
                                            'maximum': 2 ** 40},
                                'total': {'type': 'integer', 'minimum': 0,
                                          'maximum': common.MAX_INTEGER},
                                'free': {'type': 'integer', 'minimum': 0,
                                         'maximum': common.MAX_INTEGER}},
                            'required': ['size_kb', 'total', 'free'],
                            'additionalProperties': False}},
                    'distances': {
                        'type': 'object',
                        'patternProperties': {
                            '^[0-9]{1,5}$': {'type': 'integer',
                                             'minimum': 0, 'maximum': 255}},
                        'additionalProperties': False},
                },
                'required': ['id', 'cpus', 'memory_mb'],
                'additionalProperties': False}},
        'pci_devices': {
            'type': 'array', 'maxItems': 8192,
            'items': {
                'type': 'object',
                'properties': {
                    'address': {'type': 'string', 'pattern': (
                        '^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}'
                        r'\.[0-7]$')},
                    'vendor_id': _HEX,
                    'product_id': _HEX,
                    'class': {'type': 'string',
                              'pattern': '^[0-9a-fA-F]{6}$'},
                    'numa_node': {'type': ['integer', 'null'],
                                  'minimum': 0, 'maximum': 65535},
                    'physfn': {'type': ['string', 'null'], 'pattern': (
                        '^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}'
                        r'\.[0-7]$')},
                    'sriov_totalvfs': _COUNT,
                    'sriov_numvfs': _COUNT,
                    'driver': {'type': ['string', 'null'],
                               'maxLength': 255},
                    'interfaces': {'type': 'array', 'maxItems': 64,
                                   'items': _SHORT},
                    'physical_network': {'type': ['string', 'null'],
                                         'minLength': 1, 'maxLength': 255},
                    'labels': {'type': 'object', 'maxProperties': 64,
                               'additionalProperties': {
                                   'type': 'string', 'maxLength': 255}},
                },
                'required': ['address', 'vendor_id', 'product_id', 'class'],
                'additionalProperties': False}},
    },
    'required': ['sockets', 'numa_nodes', 'pci_devices'],
    'additionalProperties': False,
}
