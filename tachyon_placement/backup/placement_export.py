"""``tachyon-manage db export --to URL``: the graph written as an
openstack-placement 16.0.0 database, the way back to Placement.

The target has Placement's tables (``placement-manage db sync`` made
them) and holds no provider, consumer, allocation, custom class or custom
trait: an export never merges into a cloud.  It is read from the graph at
one graph version (Engine.frozen) and written in one SQL transaction, so
the target gets all of it or nothing.  Ids: providers keep their creation
order (the graph's ``seq``, which Placement lists by), resource classes
their ordinal (standard classes the index os-resource-classes gives them,
as Placement's own sync does; custom ones from 10000), the rest are
numbered in order.  Generations are the graph's, so Nova's next write
carries on from them.
"""
import datetime

import sqlalchemy
import tqdm

from tachyon_placement.graph import exports
from tachyon_placement.importing import source as placement_source

BATCH = 2000

# What a target may hold already: the standard classes and traits that
# Placement's API syncs at its start.
HELD = {
    'resource providers': 'SELECT COUNT(*) FROM resource_providers',
    'consumers': 'SELECT COUNT(*) FROM consumers',
    'allocations': 'SELECT COUNT(*) FROM allocations',
    'inventories': 'SELECT COUNT(*) FROM inventories',
    'aggregates': 'SELECT COUNT(*) FROM placement_aggregates',
    'projects': 'SELECT COUNT(*) FROM projects',
    # SUBSTR, not LIKE: "_" is a LIKE wildcard, and MySQL reads a
    # backslash escaping it differently from the others.
    'custom resource classes':
        "SELECT COUNT(*) FROM resource_classes "
        "WHERE SUBSTR(name, 1, 7) = 'CUSTOM_'",
    'custom traits':
        "SELECT COUNT(*) FROM traits WHERE SUBSTR(name, 1, 7) = 'CUSTOM_'",
}

# Tables whose ids the export sets itself: PostgreSQL's sequences must be
# moved past them (MySQL/MariaDB and SQLite move on their own).
SEQUENCED = ('resource_classes', 'traits', 'resource_providers',
             'inventories', 'placement_aggregates', 'projects', 'users',
             'consumer_types', 'consumers', 'allocations')


# The order rows are inserted in at each flush: every table after those its
# foreign keys name (a consumer's type before the consumer). The order
# tables were first given rows is not that: a consumer without a type
# first, then one with, put the consumers before their types (MariaDB:
# "a foreign key constraint fails").
FLUSH_ORDER = ('resource_classes', 'traits', 'resource_providers',
               'inventories', 'resource_provider_traits',
               'placement_aggregates', 'resource_provider_aggregates',
               'projects', 'users', 'consumer_types', 'consumers',
               'allocations')


class ExportRefused(Exception):
    pass


def _time(millis):
    """A graph timestamp (ms since the epoch, UTC) as Placement keeps it
    (naive UTC); now for a row that has none."""
    if millis is None:
        return datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None, microsecond=0)
    return datetime.datetime.fromtimestamp(
        millis / 1000.0, datetime.timezone.utc).replace(tzinfo=None)


def _stamps(row):
    created = _time(row.get('created_at'))
    return {'created_at': created,
            'updated_at': (_time(row['updated_at'])
                           if row.get('updated_at') is not None else None)}


class _Tables:
    """Batched INSERTs into the target, inside one transaction."""

    def __init__(self, connection):
        self.connection = connection
        self._pending = {}
        self._statements = {}
        self.written = {}

    def add(self, table, row):
        rows = self._pending.setdefault(table, [])
        rows.append(row)
        if len(rows) >= BATCH:
            self.flush()

    def flush(self):
        """Every table's pending rows, tables in FLUSH_ORDER."""
        for name in sorted(self._pending, key=_flush_rank):
            rows = self._pending.pop(name, [])
            if not rows:
                continue
            columns = sorted(rows[0])
            statement = self._statements.get((name, tuple(columns)))
            if statement is None:
                statement = sqlalchemy.text('INSERT INTO %s (%s) VALUES (%s)'
                                            % (name, ', '.join(columns),
                                               ', '.join(':' + column
                                                         for column in
                                                         columns)))
                self._statements[(name, tuple(columns))] = statement
            self.connection.execute(statement, rows)
            self.written[name] = self.written.get(name, 0) + len(rows)


def _flush_rank(table):
    return (FLUSH_ORDER.index(table) if table in FLUSH_ORDER
            else len(FLUSH_ORDER), table)


def check_target(database):
    """Raises ExportRefused unless ``database`` (importing.source.
    PlacementDatabase) has Placement's tables and holds nothing of a
    cloud."""
    try:
        database.check()
    except placement_source.NotAPlacementDatabase as exc:
        raise ExportRefused('%s (run "placement-manage db sync" on it '
                            'first)' % exc) from exc
    with database.engine.connect() as connection:
        held = {kind: connection.execute(sqlalchemy.text(query)).scalar()
                for kind, query in HELD.items()}
    found = ['%d %s' % (count, kind) for kind, count in held.items()
             if count]
    if found:
        raise ExportRefused('%s holds %s: an export goes into an empty '
                            'Placement database' % (
                                database.describe(database.url),
                                ', '.join(found)))


def export(store, database, out, progress=True):
    """Writes ``store``'s graph into ``database``; returns {table: rows
    written}."""
    check_target(database)
    with database.engine.begin() as connection, \
            store.exports.frozen() as frozen:
        if connection.dialect.name == 'mysql':
            # Standard class VCPU has id 0, which MySQL would otherwise
            # take for "the next id" (Placement's own sync does the same).
            connection.execute(sqlalchemy.text(
                "SET SESSION SQL_MODE='NO_AUTO_VALUE_ON_ZERO'"))
        tables = _Tables(connection)
        writer = _Writer(connection, tables)
        for kind, _statement in exports.KINDS:
            bar = tqdm.tqdm(desc='%-20s' % kind, unit=' rows', file=out,
                            disable=not progress, mininterval=0.5)
            with bar:
                for row in store.exports.rows(frozen, kind):
                    getattr(writer, kind)(row)
                    bar.update()
                tables.flush()
            writer.after(kind)
        if connection.dialect.name == 'postgresql':
            for table in SEQUENCED:
                connection.execute(sqlalchemy.text(
                    "SELECT setval(pg_get_serial_sequence('%s', 'id'), "
                    "COALESCE((SELECT MAX(id) FROM %s), 0) + 1, false)"
                    % (table, table)))
    return tables.written


class _Writer:
    """One method per kind of graph row: the target's rows for it."""

    def __init__(self, connection, tables):
        self.tables = tables
        self.class_ids = self._existing(connection, 'resource_classes')
        self.trait_ids = self._existing(connection, 'traits')
        self._next_trait = max(self.trait_ids.values(), default=0) + 1
        self.provider_ids = {}      # uuid -> id
        self.lineage = []        # (id, parent uuid, root uuid)
        self.aggregate_ids = {}
        self.project_ids = {}
        self.user_ids = {}
        self.type_ids = {}
        self._connection = connection

    @staticmethod
    def _existing(connection, table):
        return {row.name: row.id for row in connection.execute(
            sqlalchemy.text('SELECT id, name FROM %s' % table))}

    @staticmethod
    def _id(names, name, table, tables, extra=None):
        """The id of ``name`` in a name -> id table, adding it."""
        if name not in names:
            names[name] = len(names) + 1
            tables.add(table, dict({'id': names[name]}, **(extra or {})))
        return names[name]

    def resource_classes(self, row):
        if row['name'] in self.class_ids:
            return          # Placement's own sync put the standard one
        self.class_ids[row['name']] = row['ordinal']
        self.tables.add('resource_classes', dict(
            {'id': row['ordinal'], 'name': row['name']}, **_stamps(row)))

    def traits(self, row):
        if row['name'] in self.trait_ids:
            return
        self.trait_ids[row['name']] = self._next_trait
        self._next_trait += 1
        self.tables.add('traits', dict(
            {'id': self.trait_ids[row['name']], 'name': row['name']},
            **_stamps(row)))

    def providers(self, row):
        provider_id = row['seq']
        self.provider_ids[row['uuid']] = provider_id
        self.lineage.append((provider_id, row['parent_uuid'],
                             row['root_uuid'] or row['uuid']))
        self.tables.add('resource_providers', dict(
            {'id': provider_id, 'uuid': row['uuid'], 'name': row['name'],
             'generation': row['generation'] or 0}, **_stamps(row)))

    def inventories(self, row):
        self.tables.add('inventories', dict({
            'resource_provider_id': self.provider_ids[row['provider_uuid']],
            'resource_class_id': self.class_ids[row['resource_class']],
            'total': row['total'], 'reserved': row['reserved'],
            'min_unit': row['min_unit'], 'max_unit': row['max_unit'],
            'step_size': row['step_size'],
            'allocation_ratio': float(row['allocation_ratio'])},
            **_stamps(row)))

    def provider_traits(self, row):
        self.tables.add('resource_provider_traits', {
            'resource_provider_id': self.provider_ids[row['provider_uuid']],
            'trait_id': self.trait_ids[row['trait']],
            'created_at': _time(None), 'updated_at': None})

    def aggregates(self, row):
        if row['uuid'] in self.aggregate_ids:
            return
        self.aggregate_ids[row['uuid']] = len(self.aggregate_ids) + 1
        self.tables.add('placement_aggregates', {
            'id': self.aggregate_ids[row['uuid']], 'uuid': row['uuid'],
            'created_at': _time(row['created_at']), 'updated_at': None})

    def provider_aggregates(self, row):
        self.tables.add('resource_provider_aggregates', {
            'resource_provider_id': self.provider_ids[row['provider_uuid']],
            'aggregate_id': self.aggregate_ids[row['aggregate_uuid']],
            'created_at': _time(None), 'updated_at': None})

    def consumers(self, row):
        now = {'created_at': _time(None), 'updated_at': None}
        project = self._id(self.project_ids, row['project_id'], 'projects',
                           self.tables,
                           dict(now, external_id=row['project_id']))
        user = self._id(self.user_ids, row['user_id'], 'users', self.tables,
                        dict(now, external_id=row['user_id']))
        kind = None
        if row['consumer_type']:
            kind = self._id(self.type_ids, row['consumer_type'],
                            'consumer_types', self.tables,
                            dict(now, name=row['consumer_type']))
        self.tables.add('consumers', dict({
            'uuid': row['uuid'], 'project_id': project, 'user_id': user,
            'generation': row['generation'] or 0,
            'consumer_type_id': kind}, **_stamps(row)))

    def allocations(self, row):
        self.tables.add('allocations', dict({
            'resource_provider_id': self.provider_ids[row['provider_uuid']],
            'consumer_id': row['consumer_uuid'],
            'resource_class_id': self.class_ids[row['resource_class']],
            'used': int(row['used'])}, **_stamps(row)))

    def after(self, kind):
        """Once every provider is in: their parents and roots (a parent
        may have been made after its child: re-parenting)."""
        if kind != 'providers':
            return
        update = sqlalchemy.text(
            'UPDATE resource_providers SET parent_provider_id = :parent, '
            'root_provider_id = :root WHERE id = :id')
        rows = [{'id': provider_id,
                 'parent': self.provider_ids.get(parent),
                 'root': self.provider_ids[root]}
                for provider_id, parent, root in self.lineage]
        for start in range(0, len(rows), BATCH):
            self._connection.execute(update, rows[start:start + BATCH])
