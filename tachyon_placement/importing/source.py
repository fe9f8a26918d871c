"""Reading an openstack-placement database (the schema of its 16.0.0
release; MySQL/MariaDB, PostgreSQL or SQLite through SQLAlchemy).

Rows come out as plain dicts, in Placement's id order, in batches: a cloud
of 10,000 hosts has hundreds of thousands of allocation rows, which are
never all in memory at once.  Timestamps are UTC (Placement writes
``utcnow()``) in milliseconds since the epoch, as the graph keeps them.
"""
import calendar
import datetime
import os

import sqlalchemy

BATCH = 5000

# The tables an openstack-placement database has (16.0.0).
TABLES = ('resource_classes', 'resource_providers', 'inventories',
          'allocations', 'traits', 'resource_provider_traits',
          'placement_aggregates', 'resource_provider_aggregates',
          'projects', 'users', 'consumers', 'consumer_types')

# One query per kind of row, ordered by a unique key so that batches are
# read by key ranges (keyset pagination: no OFFSET scans). Most rows have
# an id; the association tables have a key of two columns (``:after``
# and ``:after2``, compared as a row value, which MySQL/MariaDB,
# PostgreSQL and SQLite all know).
KEYS = {'provider_traits': ('provider_id', 'trait_id'),
        'provider_aggregates': ('provider_id', 'aggregate_id')}

QUERIES = {
    'resource_classes': """
        SELECT id, name, created_at, updated_at FROM resource_classes
        WHERE id > :after ORDER BY id LIMIT :limit""",
    'traits': """
        SELECT id, name, created_at, updated_at FROM traits
        WHERE id > :after ORDER BY id LIMIT :limit""",
    'providers': """
        SELECT rp.id, rp.uuid, rp.name, rp.generation,
               parent.uuid AS parent_uuid, root.uuid AS root_uuid,
               rp.created_at, rp.updated_at
        FROM resource_providers rp
        LEFT JOIN resource_providers parent
               ON parent.id = rp.parent_provider_id
        LEFT JOIN resource_providers root ON root.id = rp.root_provider_id
        WHERE rp.id > :after ORDER BY rp.id LIMIT :limit""",
    # ``used``: what the provider's allocations of the class add up to,
    # which the graph keeps on the inventory.
    'inventories': """
        SELECT inv.id, rp.uuid AS provider_uuid, rc.name AS resource_class,
               inv.total, inv.reserved, inv.min_unit, inv.max_unit,
               inv.step_size, inv.allocation_ratio,
               COALESCE((SELECT SUM(a.used) FROM allocations a
                         WHERE a.resource_provider_id
                               = inv.resource_provider_id
                           AND a.resource_class_id = inv.resource_class_id),
                        0) AS used,
               inv.created_at, inv.updated_at
        FROM inventories inv
        JOIN resource_providers rp ON rp.id = inv.resource_provider_id
        JOIN resource_classes rc ON rc.id = inv.resource_class_id
        WHERE inv.id > :after ORDER BY inv.id LIMIT :limit""",
    'provider_traits': """
        SELECT rpt.resource_provider_id AS provider_id, rpt.trait_id,
               rp.uuid AS provider_uuid, t.name AS trait
        FROM resource_provider_traits rpt
        JOIN resource_providers rp ON rp.id = rpt.resource_provider_id
        JOIN traits t ON t.id = rpt.trait_id
        WHERE (rpt.resource_provider_id, rpt.trait_id) > (:after, :after2)
        ORDER BY rpt.resource_provider_id, rpt.trait_id LIMIT :limit""",
    'provider_aggregates': """
        SELECT rpa.resource_provider_id AS provider_id, rpa.aggregate_id,
               rp.uuid AS provider_uuid, agg.uuid AS aggregate_uuid,
               agg.created_at
        FROM resource_provider_aggregates rpa
        JOIN resource_providers rp ON rp.id = rpa.resource_provider_id
        JOIN placement_aggregates agg ON agg.id = rpa.aggregate_id
        WHERE (rpa.resource_provider_id, rpa.aggregate_id)
              > (:after, :after2)
        ORDER BY rpa.resource_provider_id, rpa.aggregate_id
        LIMIT :limit""",
    # Only consumers holding allocations: the graph has no consumer
    # without any (Placement deletes them too, but may keep a few).
    'consumers': """
        SELECT c.id, c.uuid, c.generation, p.external_id AS project_id,
               u.external_id AS user_id, ct.name AS consumer_type,
               c.created_at, c.updated_at
        FROM consumers c
        JOIN projects p ON p.id = c.project_id
        JOIN users u ON u.id = c.user_id
        LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
        WHERE c.id > :after
          AND EXISTS (SELECT 1 FROM allocations a
                      WHERE a.consumer_id = c.uuid)
        ORDER BY c.id LIMIT :limit""",
    'allocations': """
        SELECT a.id, a.consumer_id AS consumer_uuid,
               rp.uuid AS provider_uuid, rc.name AS resource_class, a.used,
               a.created_at, a.updated_at
        FROM allocations a
        JOIN resource_providers rp ON rp.id = a.resource_provider_id
        JOIN resource_classes rc ON rc.id = a.resource_class_id
        WHERE a.id > :after ORDER BY a.id LIMIT :limit""",
}

COUNTS = {
    'resource_classes': 'SELECT COUNT(*) FROM resource_classes',
    'traits': 'SELECT COUNT(*) FROM traits',
    'providers': 'SELECT COUNT(*) FROM resource_providers',
    'inventories': 'SELECT COUNT(*) FROM inventories',
    'provider_traits': 'SELECT COUNT(*) FROM resource_provider_traits',
    'provider_aggregates':
        'SELECT COUNT(*) FROM resource_provider_aggregates',
    'consumers': """SELECT COUNT(*) FROM consumers c WHERE EXISTS (
        SELECT 1 FROM allocations a WHERE a.consumer_id = c.uuid)""",
    'allocations': 'SELECT COUNT(*) FROM allocations',
}

USAGES = """
SELECT rp.uuid AS provider_uuid, rc.name AS resource_class,
       SUM(a.used) AS used
FROM allocations a
JOIN resource_providers rp ON rp.id = a.resource_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
GROUP BY rp.uuid, rc.name
"""


class NotAPlacementDatabase(Exception):
    pass


# What reading the source may raise once it is open (a lost connection, a
# server gone): the import stops there and can be resumed.
SOURCE_ERRORS = (sqlalchemy.exc.SQLAlchemyError, OSError)


def millis(value):
    """A Placement timestamp (naive UTC datetime; SQLite gives text) in
    milliseconds since the epoch; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc)
    return (calendar.timegm(value.timetuple()) * 1000
            + value.microsecond // 1000)


class PlacementDatabase:
    """An openstack-placement database, read only."""

    def __init__(self, url):
        try:
            self.engine = sqlalchemy.create_engine(url)
        except (sqlalchemy.exc.ArgumentError, ImportError) as exc:
            raise NotAPlacementDatabase(
                'cannot open %s: %s' % (self.describe(url), exc)) from exc
        self.url = url

    @staticmethod
    def describe(url):
        """The URL without its password, to print and record."""
        try:
            return sqlalchemy.engine.make_url(url).render_as_string(
                hide_password=True)
        except sqlalchemy.exc.ArgumentError:
            return '<unparsable URL>'

    def check(self):
        """Raises NotAPlacementDatabase unless every table is there (a
        SQLite file that does not exist is not made by looking)."""
        url = self.engine.url
        if url.get_backend_name() == 'sqlite' and url.database and (
                url.database != ':memory:' and not url.database.startswith(
                    'file:') and not os.path.exists(url.database)):
            raise NotAPlacementDatabase(
                '%s does not exist: not an openstack-placement database'
                % self.describe(self.url))
        try:
            present = set(sqlalchemy.inspect(self.engine).get_table_names())
        except sqlalchemy.exc.SQLAlchemyError as exc:
            raise NotAPlacementDatabase(str(exc)) from exc
        missing = [table for table in TABLES if table not in present]
        if missing:
            raise NotAPlacementDatabase(
                '%s has no %s table: not an openstack-placement database'
                % (self.describe(self.url), ', '.join(missing)))

    def counts(self):
        """{kind: rows} of everything the import reads."""
        with self.engine.connect() as connection:
            return {kind: connection.execute(sqlalchemy.text(query)).scalar()
                    for kind, query in COUNTS.items()}

    def rows(self, kind, batch=BATCH):
        """The rows of one kind (see QUERIES), in batches (lists)."""
        query = sqlalchemy.text(QUERIES[kind])
        key = KEYS.get(kind, ('id',))
        after = {'after': -1, 'after2': -1}
        with self.engine.connect() as connection:
            while True:
                found = [dict(row._mapping) for row in connection.execute(
                    query, dict(after, limit=batch))]
                if not found:
                    return
                after = {'after': found[-1][key[0]],
                         'after2': found[-1][key[-1]]}
                yield found

    def last_provider_id(self):
        with self.engine.connect() as connection:
            return connection.execute(sqlalchemy.text(
                'SELECT MAX(id) FROM resource_providers')).scalar() or 0

    def usages(self):
        """{(provider uuid, resource class): used} over all allocations."""
        with self.engine.connect() as connection:
            return {(row.provider_uuid, row.resource_class): int(row.used)
                    for row in connection.execute(sqlalchemy.text(USAGES))}

    def close(self):
        self.engine.dispose()
