"""Tachyon's GET /tachyon/capacity: how many more instances of a request
fit, per host, in total and (``per_aggregate=true``) per aggregate.  It
takes GET /allocation_candidates' query string at Placement's latest
microversion; ``limit`` is accepted and counts nothing out."""
from tachyon_placement.api import errors
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import capacity as policies
from tachyon_placement.schemas import capacity as schema
from tachyon_placement.usecases import capacity

TOO_MANY_CANDIDATES = 'tachyon.capacity.too_many_candidates'


@tachyon.handler(accept=wsgi.JSON, session=True, uses=(
    'candidates', 'resource_classes', 'traits'))
def get_capacity(req):
    req.context.can(policies.SHOW)
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    req.validate_query(schema.GET)
    groups, wide = allocation_candidate.parse_request(req)
    most = req.conf.capacity.max_candidates
    try:
        with allocation_candidate.unknown_names_refused():
            counted = capacity.count(
                req.store, groups, wide, allocation_candidate.settings(req),
                most, per_aggregate=req.GET.get('per_aggregate') == 'true')
    except capacity.TooManyCandidates:
        raise errors.BadRequest(
            'The request has more than %d allocation candidates ([capacity] '
            'max_candidates): narrow it with in_tree or member_of.' % most,
            code=TOO_MANY_CANDIDATES)
    return wsgi.json_response(req, counted)
