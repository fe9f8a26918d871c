"""Tachyon's POST /tachyon/host_weights (API version 1.0): the query
string of GET /allocation_candidates at Placement's latest microversion,
and in the body the hosts (root provider uuids) to weigh."""
from tachyon_placement.schemas import allocation_candidate
from tachyon_placement.schemas import common

# Nova passes the hosts that survived its filters, at most
# [scheduler] max_placement_results of them (1,000 by default); ten
# thousand is a whole large cloud, in under 0.4 MB of body.
MAX_HOSTS = 10000

QUERY = allocation_candidate.GET[-1][1]

POST = {
    'type': 'object',
    'properties': {
        'hosts': {'type': 'array', 'items': common.UUID,
                  'maxItems': MAX_HOSTS},
    },
    'required': ['hosts'],
    'additionalProperties': False,
}
