"""tachyon-manage: administrative commands.

``tachyon-manage --config-file FILE db sync`` creates the graph's indexes
and constraints, brings a graph an older release wrote to this release's
schema version (graph/migrations.py; a graph a newer release wrote is
refused, exit 1) and syncs the standard resource classes
(os-resource-classes) and traits (os-traits).  The API does the same on
start, idempotently.

``tachyon-manage --config-file FILE db backup FILE`` writes the graph, at
one graph version, while the service serves; ``db restore FILE`` writes
such a file into an empty graph (backup/run.py).

``tachyon-manage --config-file FILE db export --to URL`` writes the graph
into an empty openstack-placement database (backup/placement_export.py).

``tachyon-manage --config-file FILE db import --from URL`` copies an
openstack-placement database (SQLAlchemy URL: mysql+pymysql://...,
postgresql://..., sqlite:///...) into the graph (importing/run.py):
``--dry-run`` prints what it holds, ``--verify`` compares the graph with
it afterwards (or alone, with ``--verify-only``).
"""
import argparse
import sys

from oslo_config import cfg

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy


def db_sync(conf):
    from tachyon_placement.graph import migrations
    from tachyon_placement.graph import schema
    store = deploy.open_store(conf, sync=False)
    try:
        steps = store.sync()
    except migrations.Refused as exc:
        print('tachyon-manage db sync refused: %s' % exc, file=sys.stderr)
        return 1
    finally:
        store.close()
    for step in steps:
        print('Migrated the graph to schema version %d: %s.'
              % (step.version, step.summary))
    print('Graph schema (version %d), standard resource classes and traits '
          'are in sync.' % schema.SCHEMA_VERSION)
    return 0


def db_import(conf):
    from tachyon_placement.importing import run
    from tachyon_placement.importing import source as placement_source
    command = conf.command
    try:
        database = placement_source.PlacementDatabase(command.source)
        database.check()
    except placement_source.NotAPlacementDatabase as exc:
        print('tachyon-manage db import: %s' % exc, file=sys.stderr)
        return 2
    try:
        if command.dry_run:
            run.dry_run(database, sys.stdout)
            return 0
        store = deploy.open_store(conf)
        try:
            if not command.verify_only:
                try:
                    run.import_database(store, database, sys.stdout,
                                        progress=not command.no_progress,
                                        batch=command.batch_size)
                except run.ImportRefused as exc:
                    print('tachyon-manage db import: refused: %s' % exc,
                          file=sys.stderr)
                    return 3
                except placement_source.SOURCE_ERRORS as exc:
                    print('tachyon-manage db import: interrupted: %s\n'
                          'Run the same command again: the import goes on '
                          'from where it stopped.' % exc, file=sys.stderr)
                    return 5
            if command.verify or command.verify_only:
                if run.verify(store, database, sys.stdout):
                    return 4
        finally:
            store.close()
    finally:
        database.close()
    return 0


def db_backup(conf):
    from tachyon_placement.backup import run
    from tachyon_placement.graph import engine
    command = conf.command
    store = deploy.open_store(conf, sync=False)
    try:
        done = run.backup(store, command.file, sys.stderr,
                          progress=not command.no_progress)
    except (run.BackupFailed, engine.GraphError, OSError) as exc:
        print('tachyon-manage db backup: failed, nothing written: %s' % exc,
              file=sys.stderr)
        return 1
    finally:
        store.close()
    print('Backed up graph version %d (schema %s): %d nodes, %d '
          'relationships in %.1f s to %s.' % (
              done['graph_version'], done['schema_version'], done['nodes'],
              done['relationships'], done['seconds'], command.file))
    return 0


def db_restore(conf):
    from tachyon_placement.backup import archive
    from tachyon_placement.backup import run
    from tachyon_placement.graph import backups
    from tachyon_placement.graph import engine
    from tachyon_placement.graph import migrations
    command = conf.command
    store = deploy.open_store(conf, sync=False)
    try:
        done = run.restore(store, command.file, sys.stderr,
                           progress=not command.no_progress)
    except (archive.BadBackup, backups.NotEmpty,
            migrations.Refused) as exc:
        print('tachyon-manage db restore: refused: %s' % exc,
              file=sys.stderr)
        return 3
    except (run.BackupFailed, engine.GraphError) as exc:
        print('tachyon-manage db restore: failed, the graph is empty again: '
              '%s' % exc, file=sys.stderr)
        return 1
    finally:
        store.close()
    for step in done['steps']:
        print('Migrated the graph to schema version %d: %s.'
              % (step.version, step.summary))
    print('Restored graph version %d (taken %s): %d nodes, %d relationships '
          'in %.1f s; the graph version is now %d (change feed clients '
          'relist: their cursors get 410).' % (
              done['graph_version'], done['taken_at'], done['nodes'],
              done['relationships'], done['seconds'],
              done['restored_version']))
    return 0


def db_export(conf):
    from tachyon_placement.backup import placement_export
    from tachyon_placement.importing import run as import_run
    from tachyon_placement.importing import source as placement_source
    command = conf.command
    try:
        database = placement_source.PlacementDatabase(command.target)
    except placement_source.NotAPlacementDatabase as exc:
        print('tachyon-manage db export: %s' % exc, file=sys.stderr)
        return 2
    store = deploy.open_store(conf, sync=False)
    try:
        try:
            written = placement_export.export(
                store, database, sys.stdout,
                progress=not command.no_progress)
        except placement_export.ExportRefused as exc:
            print('tachyon-manage db export: refused: %s' % exc,
                  file=sys.stderr)
            return 3
        except placement_source.SOURCE_ERRORS as exc:
            print('tachyon-manage db export: failed, nothing written (one '
                  'transaction): %s' % exc, file=sys.stderr)
            return 5
        print('exported to %s: %s' % (
            database.describe(database.url),
            ', '.join('%d %s' % (count, table)
                      for table, count in sorted(written.items()))))
        if command.verify and import_run.verify(store, database,
                                                sys.stdout):
            return 4
    finally:
        store.close()
        database.close()
    return 0


def db_verify(conf):
    from tachyon_placement.graph import engine
    store = deploy.open_store(conf, sync=False)
    try:
        try:
            synced = store.schema.version(creating=True) is not None
        except engine.GraphError:
            synced = False
        if not synced:
            # An engine's error on a graph that does not exist yet
            # ("Invalid graph operation on empty key") says nothing useful.
            print('tachyon-manage db verify: the graph is empty (never '
                  'synced): run "tachyon-manage db sync" first.',
                  file=sys.stderr)
            return 5
        report = store.integrity.report()
    except engine.GraphError as exc:
        print('tachyon-manage db verify: failed: %s' % exc, file=sys.stderr)
        return 5
    finally:
        store.close()
    print(', '.join('%s %s' % (name.replace('_', ' '), value)
                    for name, value in sorted(report.counts.items())))
    for row in report.usage:
        problem = ('usage %(used)s != allocations %(allocated)s'
                   if row['used'] != row['allocated'] else
                   'usage %(used)s above capacity %(capacity)s')
        print(('provider %(provider)s %(resource_class)s: ' + problem) % row)
    for row in report.orphans:
        print('consumer %(consumer)s holds %(used)s %(resource_class)s of '
              'provider %(provider)s, which has no such inventory' % row)
    for consumer, problems in report.consumers:
        print('consumer %s: %s' % (consumer, '; '.join(problems)))
    for resource_class, allocations in sorted(report.classes.items(),
                                              key=str):
        print('%d allocations of resource class %r, which does not exist'
              % (allocations, resource_class))
    broken = [row for row in report.usage if row['used'] != row['allocated']]
    if broken or report.orphans or report.consumers or report.classes:
        print('The graph is inconsistent: %d usages, %d allocations, %d '
              'consumers, %d unknown resource classes.'
              % (len(broken), len(report.orphans), len(report.consumers),
                 len(report.classes)))
        return 4
    print('Usage equals the allocations on every inventory; every consumer '
          'and allocation names what the API would take.')
    return 0


def db_compare(conf):
    from tachyon_placement.backup import compare
    from tachyon_placement.graph import engine
    command = conf.command
    contents = []
    for uri in (conf.graph.connection, command.other):
        conf.set_override('connection', uri, group='graph')
        try:
            store = deploy.open_store(conf, sync=False)
            try:
                contents.append(compare.content(store))
            finally:
                store.close()
        except (engine.GraphError, OSError, ValueError) as exc:
            print('tachyon-manage db compare: cannot read %s: %s'
                  % ('the configured graph' if len(contents) == 0
                     else 'the other graph', exc), file=sys.stderr)
            return 5
        finally:
            conf.clear_override('connection', group='graph')
    for name, content in zip(('configured', 'other'), contents):
        labels, relationships = compare.summary(content)
        print('%s graph: version %s, %s, %d relationships' % (
            name, content.graph_version, ', '.join(
                '%d %s' % (count, label)
                for label, count in sorted(labels.items())), relationships))
    found = compare.differences(*contents)
    for line in found[:command.limit]:
        print(line)
    if found:
        print('%d differences.' % len(found))
        return 4
    print('The graphs are equal.')
    return 0


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError('%r is not a positive number' % text)
    return value


def _add_commands(subparsers):
    db = subparsers.add_parser('db', help='Graph store schema and data.')
    db_commands = db.add_subparsers(dest='db_command')
    db_commands.required = True
    sync = db_commands.add_parser(
        'sync', help='Create indexes/constraints; sync standard classes and '
                     'traits.')
    sync.set_defaults(func=db_sync)
    imports = db_commands.add_parser(
        'import', help='Copy an openstack-placement database into the '
                       'graph (resumable: run it again after an '
                       'interruption).')
    imports.add_argument('--from', dest='source', required=True,
                         metavar='URL',
                         help='SQLAlchemy URL of the Placement database.')
    imports.add_argument('--dry-run', action='store_true',
                         help='Print what the source holds; write nothing.')
    imports.add_argument('--verify', action='store_true',
                         help='Afterwards, compare counts and usages per '
                              'provider with the source.')
    imports.add_argument('--verify-only', action='store_true',
                         help='Only compare the graph with the source.')
    imports.add_argument('--batch-size', type=_positive, default=5000,
                         help='Rows per read and per write.')
    imports.add_argument('--no-progress', action='store_true',
                         help='No progress bars.')
    imports.set_defaults(func=db_import)
    export = db_commands.add_parser(
        'export', help='Write the graph into an empty openstack-placement '
                       'database (the way back to Placement).')
    export.add_argument('--to', dest='target', required=True, metavar='URL',
                        help='SQLAlchemy URL of a Placement database whose '
                             'tables "placement-manage db sync" made.')
    export.add_argument('--verify', action='store_true',
                        help='Afterwards, compare counts and usages per '
                             'provider with the graph.')
    export.add_argument('--no-progress', action='store_true',
                        help='No progress bars.')
    export.set_defaults(func=db_export)
    backup = db_commands.add_parser(
        'backup', help='Write the graph, read at one graph version while '
                       'the service serves, to FILE (JSON lines; .gz: '
                       'compressed).')
    backup.add_argument('file', metavar='FILE')
    backup.add_argument('--no-progress', action='store_true',
                        help='No progress bars.')
    backup.set_defaults(func=db_backup)
    restore = db_commands.add_parser(
        'restore', help='Write a backup into an empty graph (no API '
                        'serving it), then sync it to this release.')
    restore.add_argument('file', metavar='FILE')
    restore.add_argument('--no-progress', action='store_true',
                         help='No progress bars.')
    restore.set_defaults(func=db_restore)
    verify = db_commands.add_parser(
        'verify', help='Check the graph: usage equals the allocations on '
                       'every inventory, no allocation without its '
                       'inventory; print counts and generation sums '
                       '(exit 4 when inconsistent).')
    verify.set_defaults(func=db_verify)
    compare = db_commands.add_parser(
        'compare', help='Compare the configured graph with the one at '
                        'OTHER (a [graph] connection URI: a replica, a '
                        'restored copy), each read at one graph version '
                        '(exit 4 when they differ).')
    compare.add_argument('other', metavar='OTHER')
    compare.add_argument('--limit', type=_positive, default=20,
                         help='Differences printed at most.')
    compare.set_defaults(func=db_compare)


def main(argv=None):
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=_add_commands))
    conf(sys.argv[1:] if argv is None else argv, project='placement')
    return conf.command.func(conf)


if __name__ == '__main__':
    sys.exit(main())
