"""Every Cypher statement Tachyon sends, registered by name.

A statement has one text in the common subset of both dialects, or a text
per engine where they differ (DDL, ``EXISTS {}`` and the like).  The Neo4j
texts are all linted by Neo4j's own parser in the test suite, so nothing
else in the code base may build Cypher.
"""
import importlib
import re

_REGISTRY = {}

# Modules holding statements; imported by all_statements() so the lint test
# sees every one of them without starting an engine.
STATEMENT_MODULES = (
    'tachyon_placement.graph.schema',
    'tachyon_placement.graph.resource_classes',
    'tachyon_placement.graph.traits',
    'tachyon_placement.graph.providers',
    'tachyon_placement.graph.inventories',
    'tachyon_placement.graph.aggregates',
    'tachyon_placement.graph.allocations',
    'tachyon_placement.graph.reshaper',
    'tachyon_placement.graph.versioning',
    'tachyon_placement.graph.world_reads',
    'tachyon_placement.graph.definitions',
    'tachyon_placement.graph.weighers',
    'tachyon_placement.graph.telemetry',
    'tachyon_placement.graph.topology',
    'tachyon_placement.graph.pci_affinity',
    'tachyon_placement.graph.feed',
    'tachyon_placement.graph.importer',
    'tachyon_placement.graph.backups',
    'tachyon_placement.graph.exports',
    'tachyon_placement.graph.whatif',
    'tachyon_placement.graph.drift',
)


# Subqueries are written ``CALL { WITH x ... }`` (importing WITH), the form
# FalkorDB runs.  Neo4j 5.23+ deprecates it for the scoped ``CALL (x) {
# ... }``, which FalkorDB does not parse, so the Neo4j text is derived.
_IMPORTING_CALL = re.compile(
    r'CALL\s*\{\s*WITH\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*\n')
_BARE_CALL = re.compile(r'CALL\s*\{')


def scoped_subqueries(text):
    """``text`` with every ``CALL {}`` subquery in Neo4j's scoped form."""
    text = _IMPORTING_CALL.sub(lambda m: 'CALL (%s) {\n' % ', '.join(
        name.strip() for name in m.group(1).split(',')), text)
    return _BARE_CALL.sub('CALL () {', text)


def write_lock(variable, dialect):
    """Cypher that takes the write lock of node ``variable`` before a write
    reads the generation it guards on: Neo4j reads at read-committed
    isolation.  Setting and removing a property at once holds the lock
    until commit and leaves nothing behind, even when the guard then fails.
    FalkorDB runs one write query at a time and needs none."""
    if dialect == 'neo4j':
        return 'SET {0}._lock = true REMOVE {0}._lock'.format(variable)
    return ''


class Statement:
    __slots__ = ('name', 'common', 'neo4j', 'falkordb', 'guarded')

    def __init__(self, name, common=None, neo4j=None, falkordb=None,
                 guarded=False):
        """``guarded``: a write whose guard (generations) failed returns
        no row, and then nothing it did may persist: engines with
        multi-statement transactions roll back (FalkorDB's single query
        has nothing to undo as long as the guard precedes every write)."""
        if name in _REGISTRY:
            raise ValueError('duplicate Cypher statement name %s' % name)
        if common is None and (neo4j is None or falkordb is None):
            raise ValueError('statement %s lacks a text for an engine' % name)
        self.name = name
        self.common = common
        self.neo4j = scoped_subqueries(neo4j or common)
        self.falkordb = falkordb
        self.guarded = guarded
        _REGISTRY[name] = self

    def text(self, dialect):
        return getattr(self, dialect) or self.common

    def __repr__(self):
        return 'Statement(%s)' % self.name


def all_statements():
    for module in STATEMENT_MODULES:
        importlib.import_module(module)
    attribute_registration()
    return dict(_REGISTRY)


# A property a statement reads or writes: ``n.name`` (``.name`` in a map
# projection) or a key of a map literal, ``{name: ...}``.  Model property
# names are snake_case; labels and relationship types are not.
_PROPERTY = re.compile(r'\.\s*([a-z_][a-z0-9_]*)\b')
_MAP_KEY = re.compile(r'[{,]\s*([a-z_][a-z0-9_]*)\s*:')
_ATTRIBUTES_NAME = 'schema_attribute_names'


def attribute_names():
    """Every property name the registered statements name, sorted: what
    a FalkorDB graph must know before anything writes (see
    attribute_registration).  A superset of what they write (map keys of
    results, names only read): an extra name costs nothing."""
    for module in STATEMENT_MODULES:
        importlib.import_module(module)
    names = set()
    for name, statement in _REGISTRY.items():
        if name == _ATTRIBUTES_NAME:
            continue
        for text in {statement.common, statement.falkordb,
                     statement.neo4j} - {None}:
            names.update(_PROPERTY.findall(text))
            names.update(_MAP_KEY.findall(text))
    return sorted(names)


def attribute_registration():
    """The statement that makes the graph know every attribute name of
    attribute_names(), in that order, and leaves nothing behind.

    FalkorDB numbers attribute names per graph in the order its server
    first meets them, and a replica numbers them in the order it applies
    the replication stream, where a property's value is a bare number.
    The primary makes a name while planning a query (a CREATE or MERGE
    map) or while running it (a SET), so two concurrent writes that each
    bring a new name can number them in one order on the primary and the
    other on a replica, which then reads values under the wrong names.
    Made first, in one write and a fixed order, by every process's db
    sync before it writes anything else, the names are numbered alike
    everywhere, and no later write brings a new one (a later release's
    new names come after the old ones, in the same way).  Neo4j names
    keys by name; the statement is harmless there."""
    statement = _REGISTRY.get(_ATTRIBUTES_NAME)
    if statement is None:
        statement = Statement(_ATTRIBUTES_NAME, common=(
            'CREATE (probe:SchemaProbe)\nSET '
            + ',\n    '.join('probe.`%s` = 0' % name
                              for name in attribute_names())
            + '\nDELETE probe\n'))
    return statement


def neo4j_statements():
    return {name: stmt.text('neo4j')
            for name, stmt in sorted(all_statements().items())}


def falkordb_statements():
    return {name: stmt.text('falkordb')
            for name, stmt in sorted(all_statements().items())}
