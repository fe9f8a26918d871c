"""Tachyon's POST /tachyon/host_weights: how the stored weighers weigh the
given hosts for a request.  The query string is GET
/allocation_candidates' (at Placement's latest microversion), the body
names the hosts (root provider uuids); the answer is each host's combined
score and whether a weigher's threshold bars it, from the ranking that
orders the candidates.  Nova's scheduler weigher (tachyon_placement/nova)
asks it once per weighing, for the hosts Nova's filters kept.  A POST
because a thousand hosts do not fit in a URL; it changes nothing."""
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import host_weights as policies
from tachyon_placement.schemas import host_weights as schema
from tachyon_placement.usecases import candidates


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON, session=True,
                 uses=('candidates', 'resource_classes', 'traits'))
def weigh_hosts(req):
    req.context.can(policies.WEIGH)
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    req.validate_query(schema.QUERY)
    hosts = req.json_body(schema.POST)['hosts']
    groups, wide = allocation_candidate.parse_request(req)
    with allocation_candidate.unknown_names_refused():
        weighed = candidates.host_weights(
            req.store, groups, wide, allocation_candidate.settings(req),
            hosts)
    return wsgi.json_response(req, weighed)
