"""Combine weighers into one score per root, and order anchors by it.

As Nova combines its scheduler weighers: each weigher's raw scores are
normalised to 0..1 over the roots it scored (all equal: all 0), a root it
could not score gets 0, and the combined score is the sum of weight x
normalised score.  Higher comes first; equal scores keep Placement's
order (the sort is stable), so no weigher means Placement's order.

Scores are normalised over every root of the graph, not only over the
roots of one request, so that one ``Ranking`` (cached per graph version
and weigher set) serves every request: with one weigher the order is the
same either way.
"""
import bisect
import itertools

from tachyon_placement.weighing import model
from tachyon_placement.weighing import scorers


def normalize(raw, method=model.MINMAX):
    """{root: raw or None} -> {root: 0..1} (roots at 0 left out), like
    Nova's weights.normalize for ``minmax`` (min maps to 0, max to 1, all
    equal to 0); for ``rank`` the share of the other valued roots a root
    scores above, a tie counting half."""
    return _normalized(raw, method)[0]


def _normalized(raw, method=model.MINMAX):
    """(normalize(raw), its bounds: (min, max, how many roots have the
    min, how many the max) of the values, None when they are all equal or
    there are none, or with ``rank``: a change to one root's value may
    move every other root's score)."""
    values = [value for value in raw.values() if value is not None]
    if not values:
        return {}, None
    low, high = min(values), max(values)
    if high == low:
        return {}, None
    if method == model.RANK:
        return _ranked(raw, values), None
    span = high - low
    return ({root: (value - low) / span for root, value in raw.items()
             if value is not None and value != low},
            (low, high, values.count(low), values.count(high)))


def _ranked(raw, values):
    """{root: (roots below + half the others tied) / (roots - 1)}."""
    ordered = sorted(values)
    others = len(ordered) - 1
    normal = {}
    for root, value in raw.items():
        if value is None:
            continue
        below = bisect.bisect_left(ordered, value)
        tied = bisect.bisect_right(ordered, value) - below - 1
        share = (below + tied / 2.0) / others
        if share:
            normal[root] = share
    return normal


def _rebound(bounds, before, after):
    """The bounds (see _normalized) once a root's raw score went from
    ``before`` to ``after`` (None: no score), when its min and max stay
    what they were; else None (everything is normalised anew)."""
    if bounds is None:
        return None
    low, high, at_low, at_high = bounds
    if after is not None and not low <= after <= high:
        return None
    at_low += (after == low) - (before == low)
    at_high += (after == high) - (before == high)
    if not (at_low and at_high):
        return None
    return low, high, at_low, at_high


class Ranking:
    """The combined score of every root of ``trees`` ({root uuid:
    [records]}) for ``weighers``, with the fresh metric values
    ``signals`` ({metric: {provider uuid: value}})."""

    def __init__(self, weighers, trees, signals=None, raw=None):
        """``raw``: {weigher name: {root: raw score}} already known (see
        ``updated`` and ``with_signals``); computed from ``trees`` for the
        weighers it leaves out."""
        signals = signals or {}
        self.weighers = tuple(weighers)
        self._signals = signals
        self._roots = frozenset(trees)
        self._provider_scores = None
        self._sort_keys = None
        self._best_first = None     # (base order, that order best first)
        self._option_key = None
        # {weigher name: {root: raw score}} and {weigher name: {root:
        # normalised score}}, for explanations.
        raw = dict(raw or {})
        for weigher in self.weighers:
            if weigher.name not in raw:
                raw[weigher.name] = {
                    root: scorers.score(weigher.scorer, tree, signals)
                    for root, tree in trees.items()}
        self.raw = raw
        self.parts = {}
        self.scores = {}
        # {root: [(weigher name, why)]}: the roots a weigher's missing
        # policy (exclude) or hard threshold leaves out of the candidates,
        # and those its soft threshold offers only when no other can be.
        self.excluded = {}
        self.avoided = {}
        # {weigher name: (min, max) of its raw scores, or None}
        self._bounds = {}
        # (base order, {root: its index there}): the tie-break of the
        # best-first order, made once per base order (see best_first).
        self._positions = None
        for weigher in self.weighers:
            scores = self.raw[weigher.name]
            normal, self._bounds[weigher.name] = _normalized(
                scores, weigher.scorer.get('normalize', model.MINMAX))
            # No host with a value (an outage past the staleness limit):
            # no policy applies, so the weigher leaves Placement's order
            # and candidates alone rather than excluding every host.
            if weigher.scorer.get('threshold') or model.missing_policy(
                    weigher.scorer):
                valued = any(value is not None for value in scores.values())
                for root, value in scores.items():
                    self._judge(weigher, root, value, normal, valued)
            self.parts[weigher.name] = normal
            for root, value in normal.items():
                self.scores[root] = (self.scores.get(root, 0.0)
                                     + weigher.weight * value)

    def _judge(self, weigher, root, value, normal, valued=True):
        """What ``weigher`` does with ``root`` beyond its score ``value``
        (raw, None: no value): the missing policy's part in ``normal`` or
        its exclusion (when some root has a value: ``valued``), a
        threshold's exclusion (self.excluded, avoided)."""
        if value is None:
            policy = model.missing_policy(weigher.scorer) if valued else None
            if policy == model.EXCLUDE:
                self.excluded.setdefault(root, []).append(
                    (weigher.name, 'no value'))
            elif policy is not None:
                normal[root] = model.MISSING_PARTS[policy]
            return
        threshold = weigher.scorer.get('threshold')
        if threshold:
            why = model.past_threshold(
                threshold, scorers.measured(weigher.scorer, value))
            if why is not None:
                kept = (self.avoided if threshold.get('mode') == model.SOFT
                        else self.excluded)
                kept.setdefault(root, []).append((weigher.name, why))

    def provider_scores(self):
        """{provider uuid: weighted, normalised score} of the providers
        below the roots that metric and Cypher weighers have values for
        (a metric per NUMA node or device): how they order the providers
        within a host (see option_key).  Made once per Ranking."""
        if self._provider_scores is None:
            scores = {}
            for weigher in self.weighers:
                scorer = weigher.scorer
                if scorer['type'] == model.METRIC:
                    values = self._signals.get(scorer['metric'])
                    higher = scorer.get('higher_is_better', False)
                elif scorer['type'] == model.CYPHER:
                    values = self._signals.get(
                        model.cypher_signal(scorer['query']))
                    higher = scorer.get('higher_is_better', True)
                else:
                    continue
                below = {uuid: (value if higher else -value)
                         for uuid, value in (values or {}).items()
                         if uuid not in self._roots}
                for uuid, value in normalize(below).items():
                    scores[uuid] = (scores.get(uuid, 0.0)
                                    + weigher.weight * value)
            self._provider_scores = scores
        return self._provider_scores

    def updated(self, trees, signals, changed_roots):
        """The Ranking of the same weighers and signals after the trees of
        ``changed_roots`` changed (or went): only those are scored again.

        When no root came or went and the minimum and maximum of each
        weigher's scores stay (no changed root passes one, some root still
        holds each), the normalisation of
        the others is what it was: only the changed roots' parts, scores
        and places in the best-first order are patched (a write under a
        scheduling loop changes one host of thousands, and normalising,
        summing and sorting every root again for it was a fifth of the
        loop's time at 10,000 hosts).  Otherwise all are normalised anew.
        The result is the Ranking made from scratch either way.
        """
        signals = signals or {}
        raw = {}
        for weigher in self.weighers:
            scores = dict(self.raw[weigher.name])
            for root in changed_roots:
                tree = trees.get(root)
                if tree:
                    scores[root] = scorers.score(weigher.scorer, tree,
                                                 signals)
                else:
                    scores.pop(root, None)
            raw[weigher.name] = scores
        few = len(changed_roots) * 16 <= len(self._roots)
        same_roots = all((root in trees) == (root in self._roots)
                         for root in changed_roots)
        bounds = {}
        if few and same_roots:
            for weigher in self.weighers:
                before, after = self.raw[weigher.name], raw[weigher.name]
                found = self._bounds[weigher.name]
                for root in changed_roots:
                    found = _rebound(found, before.get(root),
                                     after.get(root))
                if found is None:
                    break
                bounds[weigher.name] = found
            else:
                return self._patched(signals, raw, bounds, changed_roots)
        return Ranking(self.weighers, trees, signals, raw=raw)

    def _patched(self, signals, raw, bounds, changed_roots):
        """``updated`` when the normalisation ``bounds`` hold (see
        there)."""
        patched = Ranking.__new__(Ranking)
        patched.weighers = self.weighers
        patched._signals = signals
        patched._roots = self._roots
        patched._provider_scores = None
        patched._option_key = None
        patched.raw = raw
        patched._bounds = bounds
        patched.parts = {}
        changed = set(changed_roots)
        patched.excluded = _without(self.excluded, changed)
        patched.avoided = _without(self.avoided, changed)
        judged = {weigher.name: bool(weigher.scorer.get('threshold')
                                     or model.missing_policy(weigher.scorer))
                  for weigher in self.weighers}
        for weigher in self.weighers:
            low, high = bounds[weigher.name][:2]
            part = dict(self.parts[weigher.name])
            scores = raw[weigher.name]
            for root in changed_roots:
                part.pop(root, None)
                if root not in scores:
                    continue        # the tree went
                value = scores[root]
                if value is not None and value != low:
                    part[root] = (value - low) / (high - low)
                if judged[weigher.name]:
                    patched._judge(weigher, root, value, part)
            patched.parts[weigher.name] = part
        patched.scores = dict(self.scores)
        for root in changed_roots:
            total = None
            for weigher in self.weighers:
                value = patched.parts[weigher.name].get(root)
                if value is not None:
                    total = ((0.0 if total is None else total)
                             + weigher.weight * value)
            if total is None:
                patched.scores.pop(root, None)
            else:
                patched.scores[root] = total
        patched._sort_keys = None
        patched._positions = self._positions
        patched._best_first = None
        if self._sort_keys is not None:
            keys = patched._sort_keys = dict(self._sort_keys)
            for root in changed_roots:
                keys[root] = -patched.scores.get(root, 0.0)
            if self._best_first is not None and patched.scores:
                base, best = self._best_first
                patched._best_first = (base, _moved(
                    best, self._sort_keys, keys, self._base_positions(base),
                    changed_roots))
        return patched

    def option_key(self):
        """option_key(self.weighers, self.provider_scores()), made once:
        a Ranking belongs to one copy of the graph, so the keys it gives a
        provider (its usage, its metric values) never change and are
        remembered (see option_key)."""
        if self._option_key is None:
            self._option_key = (option_key(self.weighers,
                                           self.provider_scores())
                                or _NO_KEY)
        return None if self._option_key is _NO_KEY else self._option_key

    def with_signals(self, trees, signals):
        """The Ranking of the same weighers and trees with other metric
        values (the collector stored new ones): only the weighers that
        read them (metric, Cypher) score the trees again."""
        kept = {weigher.name: self.raw[weigher.name]
                for weigher in self.weighers
                if not scorers.reads_signals(weigher.scorer)}
        return Ranking(self.weighers, trees, signals, raw=kept)

    def best_first(self, base_order):
        """``base_order`` (every root, in Placement's order) best first,
        ties kept; made once per Ranking and base order (or patched from
        the Ranking this one was updated from, see updated), so a request
        that visits most roots only filters it (see order for a few)."""
        if self._best_first is None or self._best_first[0] is not base_order:
            self._best_first = (base_order, self.order(base_order))
        return self._best_first[1]

    def _base_positions(self, base_order):
        if self._positions is None or self._positions[0] is not base_order:
            self._positions = (base_order, {
                root: index for index, root in enumerate(base_order)})
        return self._positions[1]

    def order(self, anchors):
        """``anchors`` (Placement's order) best first, ties kept."""
        if not self.scores:
            return list(anchors)
        keys = self._keys()
        try:
            return sorted(anchors, key=keys.__getitem__)
        except KeyError:        # an anchor this ranking never saw
            scores = self.scores
            return sorted(anchors, key=lambda root: -scores.get(root, 0.0))

    def _keys(self):
        """{root: its sort key}, made once per Ranking: the sort then
        looks keys up in C."""
        if self._sort_keys is None:
            keys = dict.fromkeys(self._roots, 0.0)
            for root, score in self.scores.items():
                keys[root] = -score
            self._sort_keys = keys
        return self._sort_keys


def _without(judged, roots):
    """{root: reasons} of ``judged`` but ``roots``."""
    return {root: reasons for root, reasons in judged.items()
            if root not in roots}


def _moved(best, before, after, positions, roots):
    """The list ``best`` (roots sorted by (``before`` key, position in the
    base order)) with ``roots`` moved to their places by their ``after``
    keys."""
    moved = list(best)
    keys = dict.fromkeys(roots)     # each root's key in ``moved`` so far
    for root in roots:
        keys[root] = before[root]

    def place(uuid):
        return (keys.get(uuid, after.get(uuid)), positions[uuid])

    for root in roots:
        del moved[bisect.bisect_left(moved, place(root), key=place)]
        keys[root] = after[root]
        bisect.insort(moved, root, key=place)
    return moved


def applicable(weighers, request):
    """The weighers whose match takes ``request`` (a RequestSummary), in
    name order: the key of a cached Ranking."""
    return tuple(sorted((weigher for weigher in weighers
                         if weigher.match.applies(request)),
                        key=lambda weigher: weigher.name))


def spread(ordered, subset_size, rng):
    """``ordered`` with its first ``subset_size`` entries shuffled (Nova's
    host_subset_size): concurrent schedulers then spread their claims
    over the best hosts instead of all racing for the first.  A list
    gives a list; an iterator stays one (the rest is not drawn)."""
    if subset_size <= 1:
        return ordered
    if isinstance(ordered, list):
        head = ordered[:subset_size]
        rng.shuffle(head)
        return head + ordered[subset_size:]
    rest = iter(ordered)
    head = list(itertools.islice(rest, subset_size))
    rng.shuffle(head)
    return itertools.chain(head, rest)


def _provider_score_key(provider_scores):
    """The sort key of providers by their metric/Cypher scores alone."""
    if not provider_scores:
        return None
    return lambda node: -provider_scores.get(node.uuid, 0.0)


# Ranking.option_key's "made, and there is none".
_NO_KEY = object()


def option_key(weighers, provider_scores=None):
    """Within a tree, the order in which the candidate search tries the
    providers of a slot: by the usage weighers of the classes the slot
    asks for (spread: the emptiest first, e.g. the least loaded NUMA node
    or PF; pack: the fullest) and by ``provider_scores`` (metric and
    Cypher weighers' values of providers below the roots, see
    Ranking.provider_scores), weighted.

    A function for domain.candidates.Settings.option_key: given a slot's
    resources ((rc, amount), ...), the sort key of its providers, or None
    when nothing orders them (Placement's order); None instead of that
    function when neither kind of weigher applies.  The search asks once
    per slot and request, then sorts the providers of every tree with it.
    Keys are remembered per provider: the records must not change while
    the function is in use (a Ranking's copy of the graph does not).
    """
    usage = [(weigher.weight, weigher.scorer['resource_class'],
              weigher.scorer.get('mode', model.SPREAD) == model.PACK)
             for weigher in weighers if weigher.scorer['type'] == model.USAGE]
    provider_scores = provider_scores or {}
    if not (usage or provider_scores):
        return None

    keys = {}       # {weighed classes: key}

    def for_slot(resources):
        asked = {rc for rc, _amount in resources}
        weighed = tuple((weight, rc, pack) for weight, rc, pack in usage
                        if rc in asked)
        if weighed in keys:
            return keys[weighed]
        if not weighed:
            key = _provider_score_key(provider_scores)
        else:
            memo = {}

            def key(node):
                found = memo.get(node.uuid)
                if found is None:
                    total = provider_scores.get(node.uuid, 0.0)
                    for weight, rc, pack in weighed:
                        inventory = node.inventories.get(rc)
                        if inventory is None or inventory.capacity <= 0:
                            continue
                        ratio = inventory.used / inventory.capacity
                        total += weight * (ratio if pack else 1.0 - ratio)
                    found = memo[node.uuid] = -total
                return found
        keys[weighed] = key
        return key
    # The order depends on the providers alone (their usage) when no
    # metric or Cypher value weighs them: what the candidate search may
    # remember per tree (domain/candidates/plan.py search_key), named by
    # this.
    for_slot.memo_token = None if provider_scores else ('usage',
                                                        tuple(usage))
    return for_slot
