"""A weigher: a name, a multiplier, the requests it applies to, a scorer."""
import dataclasses
import hashlib

# Scorer types and what each takes (the API schema checks the shapes).
USAGE = 'usage'            # resource_class, mode: pack | spread
TRAITS = 'traits'          # prefer: [trait], avoid: [trait]
AGGREGATES = 'aggregates'  # prefer: [aggregate uuid], avoid: [...]
METRIC = 'metric'          # metric: name, higher_is_better: bool
CYPHER = 'cypher'          # query: read-only Cypher returning uuid, score;
#                            higher_is_better: bool (default true)
SCORER_TYPES = (USAGE, TRAITS, AGGREGATES, METRIC, CYPHER)
CYPHER_COLUMNS = ('uuid', 'score')
# The scorers whose values come from outside (telemetry, a query): a host
# may have none.
VALUED = (METRIC, CYPHER)

# What a metric or Cypher weigher does with a host that has no value (no
# series, an exporter down, a value dropped as no finite number or outside
# the metric's bounds): ``worst`` ranks it after every host with a value
# (the default), ``best`` with the best, ``neutral`` halfway, ``exclude``
# leaves it out of the candidates.
WORST = 'worst'
BEST = 'best'
NEUTRAL = 'neutral'
EXCLUDE = 'exclude'
MISSING = (WORST, BEST, NEUTRAL, EXCLUDE)
# The normalised score of a host without a value (hosts with one have
# 0..1): a full weight below the lowest for worst.
MISSING_PARTS = {WORST: -1.0, NEUTRAL: 0.5, BEST: 1.0}

# How raw scores become 0..1: ``minmax`` (Nova's: the lowest 0, the
# highest 1, in proportion between) or ``rank`` (the share of the other
# hosts a host scores above, ties halfway: an outlier moves no other
# host's score, and 50.0 against 50.1 is one step, not the whole range).
MINMAX = 'minmax'
RANK = 'rank'
NORMALIZATIONS = (MINMAX, RANK)

# A threshold's mode: ``hard`` never offers a host past it, ``soft`` only
# when no other host can take the request.
HARD = 'hard'
SOFT = 'soft'


# Where the signals given to scorers hold each root's usage ({root uuid:
# {resource class: used}}) when this process took in the metric values
# they hold (no metric is named so: names have no '@').  A metric weigher
# with ``placed_load`` ({resource class: factor}) adds factor x each unit
# allocated on a host since then to the host's value, until the next
# sample: placements count as load before the metrics show them, so
# concurrent schedulers do not all pick the coolest host (a herd).
USAGE_AT_SAMPLE = '@usage-at-sample'


def placed_classes(weighers):
    """The resource classes some weigher counts placements of."""
    return {rc for weigher in weighers
            for rc in weigher.scorer.get('placed_load') or ()}


def missing_policy(scorer):
    """The missing-value policy of a scorer (None: it always has one)."""
    if scorer['type'] not in VALUED:
        return None
    return scorer.get('missing', WORST)


def past_threshold(threshold, value):
    """Why ``value`` (the measured value: a usage share, a metric's
    value, a Cypher score) passes ``threshold`` ({min, max, mode}), or
    None when it does not."""
    high, low = threshold.get('max'), threshold.get('min')
    if high is not None and value > high:
        return '%s above %s' % (_number(value), _number(high))
    if low is not None and value < low:
        return '%s below %s' % (_number(value), _number(low))
    return None


def _number(value):
    return ('%.6g' % value) if isinstance(value, float) else str(value)


def cypher_signal(query):
    """The name under which the collector stores a Cypher scorer's
    results beside the metrics' values (the same query, the same
    results, whichever weigher runs it)."""
    return 'cypher:' + hashlib.sha256(query.encode('utf-8')).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class ScorerBounds:
    """What one run of a Cypher scorer may take: seconds, MiB of memory
    ([telemetry] scorer_timeout, scorer_memory_limit), and rows where
    there is no graph to count providers in (the check)."""
    timeout: float
    memory_mib: int
    max_rows: int = 1000

    @classmethod
    def from_conf(cls, conf):
        return cls(timeout=conf.telemetry.scorer_timeout,
                   memory_mib=conf.telemetry.scorer_memory_limit)


PACK = 'pack'
SPREAD = 'spread'


@dataclasses.dataclass(frozen=True)
class RequestSummary:
    """What a weigher's match looks at in a GET /allocation_candidates
    request: the resource classes asked for, the traits every candidate
    must have (a required trait, not an any-of choice), the aggregates
    named in member_of, and the number of request groups."""
    resource_classes: frozenset = frozenset()
    required_traits: frozenset = frozenset()
    member_of: frozenset = frozenset()
    groups: int = 1


@dataclasses.dataclass(frozen=True)
class Match:
    """The requests a weigher applies to; an empty match applies to all.
    Every condition given must hold: the request asks for one of
    ``resource_classes``, requires every one of ``required_traits``,
    names one of ``member_of``, has between ``min_groups`` and
    ``max_groups`` request groups."""
    resource_classes: frozenset = frozenset()
    required_traits: frozenset = frozenset()
    member_of: frozenset = frozenset()
    min_groups: int = None
    max_groups: int = None

    @classmethod
    def from_document(cls, document):
        document = document or {}
        return cls(
            resource_classes=frozenset(document.get('resource_classes', ())),
            required_traits=frozenset(document.get('required_traits', ())),
            member_of=frozenset(document.get('member_of', ())),
            min_groups=document.get('min_groups'),
            max_groups=document.get('max_groups'))

    def as_document(self):
        document = {}
        for key in ('resource_classes', 'required_traits', 'member_of'):
            if getattr(self, key):
                document[key] = sorted(getattr(self, key))
        for key in ('min_groups', 'max_groups'):
            if getattr(self, key) is not None:
                document[key] = getattr(self, key)
        return document

    def applies(self, request):
        if (self.resource_classes
                and not self.resource_classes & request.resource_classes):
            return False
        if not self.required_traits <= request.required_traits:
            return False
        if self.member_of and not self.member_of & request.member_of:
            return False
        if self.min_groups is not None and request.groups < self.min_groups:
            return False
        if self.max_groups is not None and request.groups > self.max_groups:
            return False
        return True


def _frozen(value):
    """A hashable copy of a JSON value (a scorer's parameters)."""
    if isinstance(value, dict):
        return tuple(sorted((key, _frozen(item))
                            for key, item in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


@dataclasses.dataclass(frozen=True)
class Weigher:
    name: str
    weight: float
    scorer: dict = dataclasses.field(hash=False, compare=False)
    match: Match = Match()
    generation: int = 0
    # The scorer as a hashable value: weighers compare and hash by it.
    scorer_key: tuple = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, 'scorer_key', _frozen(self.scorer))

    @classmethod
    def from_document(cls, name, document, generation=0):
        """From the API's (schema-checked) or the graph's document."""
        return cls(name=name, weight=float(document['weight']),
                   scorer=dict(document['scorer']),
                   match=Match.from_document(document.get('match')),
                   generation=generation)

    def as_document(self):
        return {'name': self.name, 'weight': self.weight,
                'scorer': self.scorer, 'match': self.match.as_document(),
                'generation': self.generation}

    def stored(self):
        """The parts the graph keeps as its definition."""
        return {'weight': self.weight, 'scorer': self.scorer,
                'match': self.match.as_document()}


def named_classes(document):
    """The resource classes a weigher's document names (its match, a usage
    scorer's class, the classes of a metric scorer's placed load)."""
    scorer, match = document['scorer'], document.get('match') or {}
    classes = set(match.get('resource_classes') or ())
    if scorer['type'] == USAGE:
        classes.add(scorer['resource_class'])
    classes.update(scorer.get('placed_load') or ())
    return classes


def named_traits(document):
    """The traits a weigher's document names (its match, a traits
    scorer's preferred and avoided ones)."""
    scorer, match = document['scorer'], document.get('match') or {}
    traits = set(match.get('required_traits') or ())
    if scorer['type'] == TRAITS:
        traits |= set(scorer.get('prefer') or ()) | set(
            scorer.get('avoid') or ())
    return traits
