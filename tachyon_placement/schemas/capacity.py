"""Query string of Tachyon's GET /tachyon/capacity (API version 1.0): the
query of GET /allocation_candidates at Placement's latest microversion,
and whether to count per aggregate."""
from tachyon_placement.schemas import allocation_candidate
from tachyon_placement.schemas import derive

GET = derive(allocation_candidate.GET[-1][1], add_properties={
    'per_aggregate': {'type': 'string', 'enum': ['true', 'false']}})
