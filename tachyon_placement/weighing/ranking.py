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
from tachyon_placement.weighing import model
from tachyon_placement.weighing import scorers


def normalize(raw):
    """{root: raw or None} -> {root: 0..1}, like Nova's
    weights.normalize (min maps to 0, max to 1, all equal to 0)."""
    values = [value for value in raw.values() if value is not None]
    if not values:
        return {}
    low, high = min(values), max(values)
    if high == low:
        return {}
    span = high - low
    return {root: (value - low) / span for root, value in raw.items()
            if value is not None and value != low}


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
        for weigher in self.weighers:
            normal = normalize(self.raw[weigher.name])
            self.parts[weigher.name] = normal
            for root, value in normal.items():
                self.scores[root] = (self.scores.get(root, 0.0)
                                     + weigher.weight * value)

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
        ``changed_roots`` changed (or went): only those are scored again,
        then all are normalised anew."""
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
        return Ranking(self.weighers, trees, signals, raw=raw)

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
        ties kept; made once per Ranking and base order, so a request
        that visits most roots only filters it (see order for a few)."""
        if self._best_first is None or self._best_first[0] is not base_order:
            self._best_first = (base_order, self.order(base_order))
        return self._best_first[1]

    def order(self, anchors):
        """``anchors`` (Placement's order) best first, ties kept."""
        if not self.scores:
            return list(anchors)
        if self._sort_keys is None:
            # Made once per Ranking: the sort then looks keys up in C.
            keys = dict.fromkeys(self._roots, 0.0)
            for root, score in self.scores.items():
                keys[root] = -score
            self._sort_keys = keys
        try:
            return sorted(anchors, key=self._sort_keys.__getitem__)
        except KeyError:        # an anchor this ranking never saw
            scores = self.scores
            return sorted(anchors, key=lambda root: -scores.get(root, 0.0))


def applicable(weighers, request):
    """The weighers whose match takes ``request`` (a RequestSummary), in
    name order: the key of a cached Ranking."""
    return tuple(sorted((weigher for weigher in weighers
                         if weigher.match.applies(request)),
                        key=lambda weigher: weigher.name))


def spread(ordered, subset_size, rng):
    """``ordered`` with its first ``subset_size`` entries shuffled (Nova's
    host_subset_size): concurrent schedulers then spread their claims
    over the best hosts instead of all racing for the first."""
    if subset_size <= 1 or len(ordered) < 2:
        return ordered
    head = list(ordered[:subset_size])
    rng.shuffle(head)
    return head + list(ordered[subset_size:])


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
    return for_slot
