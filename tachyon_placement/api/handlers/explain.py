"""Tachyon's /tachyon/explain/allocation_candidates: why candidates come
in their order.  It takes GET /allocation_candidates' query string (at
Placement's latest microversion) and answers, per candidate host in the
order the candidates list them, its combined score and each weigher's
part: raw score, normalised score, weighted contribution and, for a metric
weigher, the host's value and how old it is."""
import time

from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import explain as policies
from tachyon_placement.schemas import allocation_candidate as schema
from tachyon_placement.weighing import model
from tachyon_placement.weighing import ranking


def _metric_part(weigher, root, world, now_ms, staleness_ms):
    """The host's value of the weigher's metric, how old it is and
    whether it is too old to count (``stale``); no value: no age."""
    values = world.telemetry.values.get(weigher.scorer['metric'])
    value = values[1].get(root) if values is not None else None
    if value is None:
        return {'name': weigher.scorer['metric'], 'value': None,
                'age_seconds': None, 'stale': None}
    age_ms = now_ms - values[0]
    return {'name': weigher.scorer['metric'], 'value': value,
            'age_seconds': round(age_ms / 1000.0, 3),
            'stale': age_ms > staleness_ms}


@tachyon.handler(accept=wsgi.JSON, uses=(
    'candidates', 'resource_classes', 'traits', 'worlds'))
def explain_candidates(req):
    req.context.can(policies.EXPLAIN)
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    # The schema of that latest microversion.
    req.validate_query(schema.GET[-1][1])
    groups, wide = allocation_candidate.parse_request(req)
    result = allocation_candidate.find(req, groups, wide)
    world = req.store.worlds.current()
    weighers = ranking.applicable(
        world.weighers, allocation_candidate.request_summary(groups, wide))
    now_ms = int(time.time() * 1000)
    ranked = None
    if weighers:
        ranked = world.ranking(
            weighers, now_ms, req.conf.telemetry.staleness_limit * 1000)
    hosts = []
    seen = set()
    for request in result.allocation_requests:
        root = request.anchor
        if root in seen:
            continue
        seen.add(root)
        record = world.records.get(root)
        parts = []
        for weigher in weighers:
            normal = ranked.parts[weigher.name].get(root, 0.0)
            part = {'weigher': weigher.name, 'weight': weigher.weight,
                    'raw': ranked.raw[weigher.name].get(root),
                    'normalized': normal,
                    'contribution': weigher.weight * normal}
            if weigher.scorer['type'] == model.METRIC:
                part['metric'] = _metric_part(
                    weigher, root, world, now_ms,
                    req.conf.telemetry.staleness_limit * 1000)
            parts.append(part)
        hosts.append({
            'root_provider_uuid': root,
            'name': record.provider.name if record else None,
            'score': ranked.scores.get(root, 0.0) if ranked else 0.0,
            'weighers': parts})
    return wsgi.json_response(req, {
        'weighers': [weigher.name for weigher in weighers],
        'hosts': hosts})
