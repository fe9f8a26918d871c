"""Tachyon's /tachyon/explain/allocation_candidates: why candidates come
in their order.  It takes GET /allocation_candidates' query string (at
Placement's latest microversion) and answers, per candidate host in the
order the candidates list them, its combined score and each weigher's
part: raw score, normalised score, weighted contribution and, for a metric
weigher, the host's value and how old it is."""
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import explain as policies
from tachyon_placement.schemas import allocation_candidate as schema
from tachyon_placement.usecases import candidates


@tachyon.handler(accept=wsgi.JSON, session=True, uses=(
    'candidates', 'resource_classes', 'traits'))
def explain_candidates(req):
    req.context.can(policies.EXPLAIN)
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    # The schema of that latest microversion.
    req.validate_query(schema.GET[-1][1])
    groups, wide = allocation_candidate.parse_request(req)
    with allocation_candidate.unknown_names_refused():
        explained = candidates.explain(req.store, groups, wide,
                                       allocation_candidate.settings(req))
    return wsgi.json_response(req, explained)
