"""Storing a weigher: what its definition names checked against the graph
and its Cypher scorer tried where it cannot hurt the serving engine,
before the weighing room's model of it is stored."""
from tachyon_placement.domain import errors
from tachyon_placement.weighing import cypher_text
from tachyon_placement.weighing import model


def checked(store, name, document, bounds):
    """The model.Weigher of ``document`` (checked against its schema),
    once what it names exists and its Cypher scorer, if any, is accepted
    within ``bounds`` (model.ScorerBounds); errors.Invalid with the
    message otherwise.  A Cypher scorer disabled for breaking its bounds
    is given another chance."""
    match = document.get('match') or {}
    if match.get('min_groups', 1) > match.get('max_groups', 1000):
        raise errors.Invalid('match: min_groups exceeds max_groups.')
    threshold = document['scorer'].get('threshold') or {}
    if threshold.get('min', float('-inf')) > threshold.get('max',
                                                           float('inf')):
        raise errors.Invalid('threshold: min exceeds max.')
    if set(threshold) == {'mode'}:
        raise errors.Invalid('threshold: give min, max or both.')
    _check_names(store, document)
    if document['scorer']['type'] == model.CYPHER:
        query = document['scorer']['query']
        try:
            cypher_text.check(query)
        except cypher_text.Refused as exc:
            raise errors.Invalid('cypher scorer refused: %s' % exc)
        store.scorers.check(query, bounds, model.CYPHER_COLUMNS)
        store.scorers.enable_signal(model.cypher_signal(query))
    return model.Weigher.from_document(name, document)


def _check_names(store, document):
    """Invalid for what the weigher names that does not exist (it would
    score nothing, silently): resource classes, traits, its metric."""
    scorer = document['scorer']
    missing = store.resource_classes.missing(model.named_classes(document))
    if missing:
        raise errors.Invalid('No such resource class %s.'
                             % ', '.join(sorted(missing)))
    missing = store.traits.missing(model.named_traits(document))
    if missing:
        raise errors.Invalid('No such trait(s): %s.'
                             % ', '.join(sorted(missing)))
    if scorer['type'] == model.METRIC:
        try:
            store.metrics.get(scorer['metric'])
        except errors.NotFound:
            raise errors.Invalid('No such metric %s: store it first '
                                 '(PUT /tachyon/metrics/%s).' % (
                                     scorer['metric'], scorer['metric']))


def naming_class(store, name):
    """The weighers that name resource class ``name``, by name: it may not
    be deleted while they do (they would go on naming a class that is
    not, scoring nothing)."""
    return sorted(weigher.name for weigher in store.weighers.list()
                  if name in model.named_classes(weigher.as_document()))


def naming_trait(store, name):
    """The weighers that name trait ``name``, by name (as naming_class)."""
    return sorted(weigher.name for weigher in store.weighers.list()
                  if name in model.named_traits(weigher.as_document()))
