"""Allocation candidates and why they come in their order: the use cases
behind GET /allocation_candidates and /tachyon/explain/allocation_candidates.

One search over one copy of the graph (world/candidates.py WorldReader):
probes bound the roots a candidate can be anchored at (domain.candidates
plans and checks them), the weighers that apply to the request order the
roots and the options within a tree (weighing/), the operator's PCI-NUMA
affinity rules refine the trees (topology/affinity.py), and the domain
searches.  Explain answers from the very copy the search read.
"""
import dataclasses
import random
import time

from tachyon_placement.domain import candidates as domain
from tachyon_placement.monitoring import metrics
from tachyon_placement.topology import affinity
from tachyon_placement.weighing import model as weighing_model
from tachyon_placement.weighing import ranking
from tachyon_placement.weighing import scorers as weighing_scorers


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """What the configuration and the microversion say about a search."""
    max_candidates: int
    strategy: str
    randomize: bool
    nested_aware: bool
    staleness_limit: float      # seconds a metric value counts
    host_subset_size: int
    numa_free_memory_metric: str = None
    summaries: bool = True      # False: no provider summaries (counts)

    @classmethod
    def from_conf(cls, conf, nested_aware):
        return cls(
            max_candidates=conf.placement.max_allocation_candidates,
            strategy=conf.placement.allocation_candidates_generation_strategy,
            randomize=conf.placement.randomize_allocation_candidates,
            nested_aware=nested_aware,
            staleness_limit=conf.telemetry.staleness_limit,
            host_subset_size=conf.weighing.host_subset_size,
            numa_free_memory_metric=conf.telemetry.numa_free_memory_metric)


def find(store, groups, wide, settings):
    """The domain.Candidates of a parsed request (domain RequestGroups and
    RequestWide).  domain.UnknownResourceClass or UnknownTrait when the
    request names one the graph does not have."""
    return _search(store, store.candidates.reader(), groups, wide,
                   settings)[0]


def explain(store, groups, wide, settings):
    """Per candidate host, in the order the candidates list them, its
    combined score and each applicable weigher's part (raw and normalised
    score, weighted contribution; a metric weigher's value and age):
    {'weighers': [name], 'hosts': [...]}."""
    reader = store.candidates.reader()
    result, barred = _search(store, reader, groups, wide, settings)
    world = reader.world
    weighers = ranking.applicable(world.weighers,
                                  request_summary(groups, wide))
    now_ms = int(time.time() * 1000)
    staleness_ms = settings.staleness_limit * 1000
    ranked = (world.ranking(weighers, now_ms, staleness_ms)
              if weighers else None)
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
            raw = ranked.raw[weigher.name].get(root)
            part = {'weigher': weigher.name, 'weight': weigher.weight,
                    'raw': raw,
                    # What was measured (a share in use, a metric's
                    # value): raw is it negated when lower is better.
                    'value': weighing_scorers.measured(weigher.scorer, raw),
                    'normalized': normal,
                    'contribution': weigher.weight * normal}
            policy = weighing_model.missing_policy(weigher.scorer)
            if raw is None and policy:
                part['missing'] = policy
            if weigher.scorer['type'] == weighing_model.METRIC:
                part['metric'] = _metric_part(weigher, root, world, now_ms,
                                              staleness_ms)
            parts.append(part)
        hosts.append({
            'root_provider_uuid': root,
            'name': record.provider.name if record else None,
            'score': ranked.scores.get(root, 0.0) if ranked else 0.0,
            'weighers': parts})
    excluded = []
    for root, (mode, reasons) in sorted(barred.items()):
        record = world.records.get(root)
        excluded.append({
            'root_provider_uuid': root,
            'name': record.provider.name if record else None,
            # soft: offered after all because no other host could be
            'mode': mode, 'offered': root in seen,
            'reasons': [{'weigher': name, 'why': why}
                        for name, why in reasons]})
    return {'weighers': [weigher.name for weigher in weighers],
            'hosts': hosts, 'excluded': excluded}


def host_weights(store, groups, wide, settings, hosts):
    """How the weighers that apply to a request weigh ``hosts`` (root
    provider uuids, e.g. the hosts Nova's filters kept): the very Ranking
    that orders the hosts of GET /allocation_candidates for it (one
    ranking, two consumers: the candidate order and Nova's scheduler
    weigher, tachyon_placement/nova), read from an exactly fresh copy of
    the graph; no candidate search.

    {'weighers': [name], 'hosts': {uuid: {'score': combined score, or
    None for a uuid that is no root provider, 'excluded': None or {'mode':
    hard or soft, 'reasons': [{'weigher', 'why'}]}}}}.
    domain.UnknownResourceClass or UnknownTrait as for the search."""
    _refuse_unknown_names(store, groups, wide)
    world = store.candidates.reader().world
    ranked = _ranking(world, request_summary(groups, wide),
                      settings.staleness_limit)
    weighed = {}
    for root in hosts:
        if root not in world.trees:
            weighed[root] = {'score': None, 'excluded': None}
            continue
        score, excluded = 0.0, None
        if ranked is not None:
            score = ranked.scores.get(root, 0.0)
            for mode, judged in ((weighing_model.HARD, ranked.excluded),
                                 (weighing_model.SOFT, ranked.avoided)):
                if root in judged:
                    excluded = {'mode': mode, 'reasons': [
                        {'weigher': name, 'why': why}
                        for name, why in judged[root]]}
                    break
        weighed[root] = {'score': score, 'excluded': excluded}
    return {'weighers': [weigher.name for weigher in ranked.weighers]
            if ranked is not None else [],
            'hosts': weighed}


def _refuse_unknown_names(store, groups, wide):
    """domain.UnknownResourceClass or UnknownTrait for the first class or
    trait the request names that the graph lacks (by name)."""
    classes, traits = _names(groups, wide)
    unknown = sorted(store.resource_classes.missing(classes))
    if unknown:
        raise domain.UnknownResourceClass(unknown[0])
    unknown = sorted(store.traits.missing(traits))
    if unknown:
        raise domain.UnknownTrait(unknown[0])


def _names(groups, wide):
    """(The resource classes, the traits) a request names."""
    classes = {rc for group in groups for rc in group.resources}
    traits = set(wide.root_required) | set(wide.root_forbidden)
    for group in groups:
        traits |= group.forbidden_traits
        for any_of in group.required_traits:
            traits |= any_of
    return classes, traits


def request_summary(groups, wide):
    """What a weigher's match looks at in this request."""
    required = set(wide.root_required)
    member_of = set()
    for group in groups:
        required.update(next(iter(any_of))
                        for any_of in group.required_traits
                        if len(any_of) == 1)
        for any_of in group.member_of:
            member_of.update(any_of)
    return weighing_model.RequestSummary(
        resource_classes=frozenset(rc for group in groups
                                   for rc in group.resources),
        required_traits=frozenset(required),
        member_of=frozenset(member_of), groups=len(groups))


class TooManyCandidates(Exception):
    """More candidates than a count may enumerate."""

    def __init__(self, most):
        super().__init__(most)
        self.most = most


def every_candidate(store, groups, wide, settings, most):
    """(Every candidate of the request in Placement's order: no limit, no
    maximum, depth first, not shuffled, no weigher (domain.Candidates);
    the search's snapshot of the trees they come from; the World
    searched), what capacity counts (capacity/counting.py).  The
    operator's PCI-NUMA affinity rules apply as they do to GET
    /allocation_candidates.  TooManyCandidates past ``most``."""
    reader = store.candidates.reader()
    # One more than the most: enough to tell a request that has more.
    settings = dataclasses.replace(
        settings, max_candidates=most + 1, strategy=domain.DEPTH_FIRST,
        randomize=False, nested_aware=True, summaries=False)
    wide = dataclasses.replace(wide, limit=None)
    found = _searched(store, reader, groups, wide, settings,
                      weighed=False)[0]
    if len(found.allocation_requests) > most:
        raise TooManyCandidates(most)
    snapshot, _load = reader.search_snapshot(reader.sharing_providers(),
                                             None)
    return found, snapshot, reader.world


def _search(store, reader, groups, wide, settings):
    """The search, timed for the metrics: (domain.Candidates, {root:
    (hard or soft, [(weigher, why)])} of the roots that could take the
    request but that weighers' thresholds or missing policies bar)."""
    started = time.monotonic()
    result, weighed, barred = _searched(store, reader, groups, wide,
                                        settings)
    metrics.candidate_search(weighed, time.monotonic() - started,
                             len(result.allocation_requests))
    return result, barred


def _searched(store, reader, groups, wide, settings, weighed=True):
    """(domain.Candidates, whether weighers ordered them, the roots
    they barred: see _search); ``weighed`` False: in Placement's order
    whatever weighers are stored."""
    classes, traits = _names(groups, wide)
    unknown_classes = store.resource_classes.missing(classes)
    unknown_traits = store.traits.missing(traits)
    located = reader.provider_roots(
        {group.in_tree for group in groups if group.in_tree})
    in_tree_roots = {index: located[group.in_tree]
                     for index, group in enumerate(groups)
                     if group.in_tree in located}
    sharing = reader.sharing_providers()

    probes = domain.plan_probes(groups, wide, in_tree_roots)
    selective = [probe for probe in probes if probe.selective]
    resource_probes = [probe for probe in probes if not probe.selective]
    rows = reader.run_probes(selective, sharing) if selective else {}
    bound = None
    if not (unknown_classes or unknown_traits):
        # With a name unknown the request fails or finds nothing; the
        # resource probes then stay unbounded so the failure is the one
        # Placement reports first.
        bound = domain.candidate_roots(selective, rows)
    if bound is not None and not bound:
        rows.update({probe.key: domain.ProbeResult()
                     for probe in resource_probes})
    else:
        rows.update(reader.run_probes(resource_probes, sharing,
                                      roots=bound))

    # What each group's probes allow: checked, then intersected.
    bounds = domain.group_anchors(probes, rows)
    viable = domain.check_request(groups, wide, unknown_classes,
                                  unknown_traits, in_tree_roots, probes,
                                  rows, bounds)
    roots = domain.candidate_roots(probes, rows, bounds) if viable else None
    if not roots:
        return domain.empty(), False, {}
    # Visit the roots oldest first (Placement's order), or best first
    # when weighers apply.
    snapshot, load = reader.search_snapshot(sharing, roots)
    world = reader.world
    ranked = None
    if weighed:
        ranked = _ranking(world, request_summary(groups, wide),
                          settings.staleness_limit)

    def search(anchor_roots):
        return domain.find_candidates(
            snapshot, groups, wide, domain.Settings(
                max_candidates=settings.max_candidates,
                strategy=settings.strategy, randomize=settings.randomize,
                nested_aware=settings.nested_aware,
                option_key=ranked.option_key() if ranked else None,
                refiner=_affinity_refiner(world, settings),
                summaries=settings.summaries),
            in_tree_roots=in_tree_roots,
            anchors=_weighed(reader, ranked, anchor_roots,
                             settings.host_subset_size),
            load=load)

    if ranked is None or not (ranked.excluded or ranked.avoided):
        return search(roots), ranked is not None, {}
    # Thresholds and missing values bar roots before the search (and so
    # before its limit): the excluded never, the avoided (soft
    # thresholds) only when no other root takes the request.
    wanted = roots if isinstance(roots, (set, frozenset)) else set(roots)
    excluded = wanted.intersection(ranked.excluded)
    avoided = wanted.intersection(ranked.avoided) - excluded
    barred = {root: (weighing_model.HARD, ranked.excluded[root])
              for root in excluded}
    barred.update((root, (weighing_model.SOFT, ranked.avoided[root]))
                  for root in avoided)
    found = search(wanted - excluded - avoided)
    if found.allocation_requests or not avoided:
        return found, True, barred
    return search(avoided), True, barred


def _ranking(world, request, staleness_limit):
    """The weighing Ranking of the weighers that apply to ``request`` (a
    weighing.model.RequestSummary), with the metric values at most
    ``staleness_limit`` seconds old; None when no weigher applies."""
    if not world.weighers:
        return None
    weighers = ranking.applicable(world.weighers, request)
    if not weighers:
        return None
    return world.ranking(weighers, int(time.time() * 1000),
                         staleness_limit * 1000)


def _weighed(reader, ranked, roots, subset_size):
    """``roots`` in the order the search visits them: best first by
    ``ranked`` (ties in Placement's order, the best ``subset_size``
    shuffled), else Placement's order.  An iterable: drawn from lazily
    when it filters the order of every root, as a limited search only
    visits the first few thousand."""
    if ranked is None:
        return reader.order_roots(roots)
    world = reader.world
    wanted = roots if isinstance(roots, (set, frozenset)) else set(roots)
    if len(wanted) * 16 >= len(world.root_uuids):
        # Most roots: filter the ranking's own order of all of them.
        ordered = filter(wanted.__contains__,
                         ranked.best_first(world.root_uuids))
    else:
        ordered = ranked.order(reader.order_roots(wanted))
    return ranking.spread(ordered, subset_size, random)


def _affinity_refiner(world, settings):
    """The PCI-NUMA affinity refiner of the operator's rules over the
    hosts' published topologies, with the values of the configured
    free-memory-per-NUMA-node metric (MiB) that count; None when there is
    no rule."""
    if not world.pci_affinity:
        return None
    numa_free = None
    if settings.numa_free_memory_metric:
        numa_free = world.telemetry.fresh(
            int(time.time() * 1000),
            settings.staleness_limit * 1000).get(
                settings.numa_free_memory_metric)
    return affinity.Refiner(world.pci_affinity, world.layouts,
                            world.records, numa_free)


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
