"""JSON schemas of Tachyon's /tachyon/metrics (API version 1.0)."""
from tachyon_placement.schemas import common

PUT = {
    'type': 'object',
    'properties': {
        # An instant PromQL query (Aetos serves no range queries: use
        # range functions inside it, e.g. avg_over_time(x[5m])).
        'query': {'type': 'string', 'minLength': 1, 'maxLength': 4096},
        # The series label that names the provider.
        'label': {'type': 'string', 'pattern': '^[a-zA-Z_][a-zA-Z0-9_]*$',
                  'maxLength': 255},
        # root: the label is a compute host, a root provider's name;
        # provider: the label is a provider uuid; numa: the label is a
        # compute host and numa_label the id of one of its NUMA nodes.
        'target': {'enum': ['root', 'provider', 'numa']},
        'numa_label': {'type': 'string',
                       'pattern': '^[a-zA-Z_][a-zA-Z0-9_]*$',
                       'maxLength': 255},
        'rewrite': {
            'type': 'object',
            'properties': {
                'pattern': {'type': 'string', 'minLength': 1,
                            'maxLength': 1024},
                'replacement': {'type': 'string', 'maxLength': 1024},
            },
            'required': ['pattern'],
            'additionalProperties': False,
        },
        # How the values of several series naming one provider combine;
        # absent: such series are refused (see the dry run).
        'combine': {'enum': ['max', 'min', 'sum', 'mean']},
        # The values a series may take (e.g. 0 and 100 for a percentage):
        # one outside is dropped (counted in the telemetry status), the
        # provider then has no value (its weighers' missing policy).
        'bounds': {
            'type': 'object',
            'properties': {'min': {'type': 'number'},
                           'max': {'type': 'number'}},
            'minProperties': 1,
            'additionalProperties': False,
        },
        'generation': {'type': ['integer', 'null'], 'minimum': 0,
                       'maximum': common.MAX_INTEGER},
    },
    'required': ['query'],
    'additionalProperties': False,
}
