"""``tachyon-manage db backup FILE`` and ``db restore FILE``.

Backup is online: it reads the graph through Engine.frozen, one graph
version while the service goes on serving (FalkorDB copies the graph at
once and writes never wait; Neo4j Community has no snapshot, so writes
wait for the read: see the docs for the figures).  Restore goes into an
empty graph with no API serving it: it checks the whole file first, then
writes it in batches; a restore that fails is undone (the graph is empty
again), one that is killed leaves the graph marked, refused by the API,
and the next restore starts again.  Then the graph is brought to this
release's schema (Store.sync), so a backup taken by an older release
restores into a newer one.
"""
import time

import tqdm

from tachyon_placement.backup import archive
from tachyon_placement.graph import backups
from tachyon_placement.graph import migrations
from tachyon_placement.graph import schema

BATCH = 1000


class BackupFailed(Exception):
    pass


def _version():
    try:
        import pbr.version
        return pbr.version.VersionInfo('tachyon-placement').version_string()
    except Exception:  # noqa: BLE001 - a version is a courtesy here
        return 'unknown'


def _bar(out, progress, desc, total=None):
    return tqdm.tqdm(total=total, desc='%-14s' % desc, unit=' records',
                     file=out, disable=not progress, mininterval=0.5)


def backup(store, path, out, progress=True):
    """Writes the graph to ``path``; returns the header it wrote, with
    the counts and the seconds it took."""
    started = time.monotonic()
    writer = archive.Writer(path)
    try:
        with store.backups.frozen() as frozen:
            graph_version, schema_version = store.backups.versions(frozen)
            writer.header(schema_version if schema_version is not None
                          else migrations.UNVERSIONED, graph_version,
                          store.engine.dialect, _version())
            with _bar(out, progress, 'nodes') as bar:
                for node_id, labels, properties in store.backups.nodes(
                        frozen):
                    if len(labels) != 1 or labels[0] not in backups.LABELS:
                        raise BackupFailed(
                            'a node labelled %s: not one this release '
                            'keeps (is the graph from a newer release?)'
                            % labels)
                    writer.node(node_id, labels, properties)
                    bar.update()
            with _bar(out, progress, 'relationships') as bar:
                for start, kind, end, properties in \
                        store.backups.relationships(frozen):
                    writer.relationship(start, kind, end, properties)
                    bar.update()
        writer.finish()
    except BaseException:
        writer.abandon()
        raise
    return {'graph_version': graph_version,
            'schema_version': schema_version, 'nodes': writer.nodes,
            'relationships': writer.relationships,
            'seconds': time.monotonic() - started}


def restore(store, path, out, progress=True):
    """Writes the backup at ``path`` into ``store``'s empty graph; returns
    what it restored (counts, versions, seconds)."""
    started = time.monotonic()
    header = archive.check(path, backups.LABELS, backups.RELATIONSHIP_TYPES)
    if header['schema_version'] > schema.SCHEMA_VERSION:
        raise archive.BadBackup(
            '%s was taken from a graph of schema version %d, written by a '
            'newer release of Tachyon; this release knows versions up to '
            '%d: restore it with that release (or one newer).'
            % (path, header['schema_version'], schema.SCHEMA_VERSION))
    store.engine.ensure_schema()
    store.backups.begin_restore('%s (graph version %d, taken %s)' % (
        path, header['graph_version'], header['taken_at']))
    try:
        ids = _restore_nodes(store, path, out, progress, header['nodes'])
        made = _restore_relationships(store, path, ids, out, progress,
                                      header['relationships'])
        if made != header['relationships']:
            raise BackupFailed('%d of %d relationships were made'
                               % (made, header['relationships']))
        version = store.backups.finish_restore()
    except BaseException:
        store.backups.abandon_restore()
        raise
    steps = store.sync()
    return dict(header, restored_version=version, steps=steps,
                seconds=time.monotonic() - started)


def _restore_nodes(store, path, out, progress, total):
    ids = {}
    pending = {}

    def flush(label):
        ids.update(store.backups.restore_nodes(label, pending.pop(label)))

    with _bar(out, progress, 'nodes', total) as bar:
        for record in archive.records(path):
            if record[0] != 'node':
                break
            _kind, node_id, label, properties = record
            rows = pending.setdefault(label, [])
            rows.append({'id': node_id, 'props': properties})
            if len(rows) >= BATCH:
                flush(label)
            bar.update()
        for label in list(pending):
            flush(label)
    return ids


def _restore_relationships(store, path, ids, out, progress, total):
    made = 0
    pending = {}

    def flush(kind):
        return store.backups.restore_relationships(kind, pending.pop(kind))

    with _bar(out, progress, 'relationships', total) as bar:
        for record in archive.records(path):
            if record[0] != 'relationship':
                continue
            _kind, start, kind, end, properties = record
            rows = pending.setdefault(kind, [])
            rows.append({'start': ids[start], 'end': ids[end],
                         'props': properties})
            if len(rows) >= BATCH:
                made += flush(kind)
            bar.update()
        for kind in list(pending):
            made += flush(kind)
    return made
