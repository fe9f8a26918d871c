"""``tachyon-manage db import``: an openstack-placement database into the
graph.

Resumable, not atomic: the graph database has no transaction the size of
a cloud, so the import writes kind after kind in batches that are each
idempotent (see graph/importer.py) and records each kind once done.  Run
the same command again after an interruption: it goes on from the first
kind not done, writing its batches again.  The graph must be empty when an
import starts (or hold an unfinished import of the same source), and the
API must not serve it until the import finished: stop Placement, import,
then start Tachyon.
"""
import time

import tqdm

from tachyon_placement.importing import plan
from tachyon_placement.importing import source as placement_source


class ImportRefused(Exception):
    pass


def _say(out, text):
    print(text, file=out, flush=True)


def dry_run(database, out):
    """Prints what the source holds; writes nothing."""
    counts = database.counts()
    for kind, count in counts.items():
        _say(out, '%-20s %d' % (kind, count))
    return counts


def import_database(store, database, out, progress=True,
                    batch=placement_source.BATCH):
    """Imports ``database`` (importing.source.PlacementDatabase) into
    ``store``'s graph; returns {kind: rows written}."""
    source = database.describe(database.url)
    marker, providers = store.imports.marker()
    if marker is None and providers:
        raise ImportRefused(
            'the graph already holds %d resource providers: an import '
            'goes into an empty graph' % providers)
    if marker is not None and marker['source'] != source:
        raise ImportRefused(
            'the graph holds an import of %s, not of %s'
            % (marker['source'], source))
    if marker is not None and marker['finished']:
        raise ImportRefused('%s is imported already' % source)
    done = set(marker['done']) if marker else set()
    if done:
        _say(out, 'resuming the import of %s (done: %s)'
             % (source, ', '.join(kind for kind, _ in plan.KINDS
                                  if kind in done)))
    store.imports.begin(source)
    counts = database.counts()
    written = {}
    started = time.monotonic()
    for kind, rows_of in plan.KINDS:
        if kind in done:
            continue
        bar = tqdm.tqdm(total=counts[rows_of], desc='%-20s' % kind,
                        unit=' rows', file=out, disable=not progress,
                        dynamic_ncols=True, mininterval=0.5)
        written[kind] = 0
        with bar:
            for rows in database.rows(rows_of, batch):
                converted = plan.convert(kind, rows)
                if converted:
                    written[kind] += store.imports.rows(kind, converted)
                bar.update(len(rows))
        store.imports.mark(kind)
    stamp, providers = store.imports.finish(database.last_provider_id())
    _say(out, 'imported %s in %.1f s: %s; graph version %d'
         % (source, time.monotonic() - started,
            ', '.join('%d %s' % (count, kind)
                      for kind, count in written.items()), stamp))
    return written


def verify(store, database, out):
    """Compares counts and per-provider usages with the source; a list of
    differences (empty: they agree)."""
    source_counts = database.counts()
    graph_counts = store.imports.counts()
    problems = plan.compare(source_counts, graph_counts, database.usages(),
                            store.imports.usages())
    for kind in graph_counts:
        _say(out, '%-20s source %-9d graph %d' % (
            kind, source_counts[kind], graph_counts[kind]))
    if problems:
        for problem in problems[:50]:
            _say(out, 'DIFFERS: ' + problem)
        if len(problems) > 50:
            _say(out, '... and %d more' % (len(problems) - 50))
    else:
        _say(out, 'counts and usages per provider agree with the source')
    return problems
