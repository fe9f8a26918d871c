"""The store port: the operations the API and domain need, nothing more.

``Store`` composes one store per resource, each keeping its Cypher beside
it.  ``open_engine(conf)`` picks the engine from ``[graph]
connection``: Neo4j for bolt:// and neo4j:// URIs, an external FalkorDB for
falkor:// or unix://, otherwise the embedded FalkorDB server.
"""
import collections
import urllib.parse

import os_resource_classes
import os_traits

from tachyon_placement.graph import aggregates
from tachyon_placement.graph import allocations
from tachyon_placement.graph import backups
from tachyon_placement.graph import cypher
from tachyon_placement.graph import drift
from tachyon_placement.graph import exports
from tachyon_placement.graph import feed
from tachyon_placement.graph import importer
from tachyon_placement.graph import integrity
from tachyon_placement.graph import inventories
from tachyon_placement.graph import migrations
from tachyon_placement.graph import pci_affinity
from tachyon_placement.graph import providers
from tachyon_placement.graph import reshaper
from tachyon_placement.graph import schema
from tachyon_placement.graph import telemetry
from tachyon_placement.graph import resource_classes
from tachyon_placement.graph import topology
from tachyon_placement.graph import traits
from tachyon_placement.graph import versioning
from tachyon_placement.graph import weighers
from tachyon_placement.graph import whatif
from tachyon_placement.graph import world_reads

# The graph key of FalkorDB when [graph] database is unset.
FALKORDB_GRAPH = 'placement'

NEO4J_SCHEMES = ('bolt', 'bolt+s', 'bolt+ssc', 'neo4j', 'neo4j+s',
                 'neo4j+ssc')


class Models(collections.namedtuple('Models', 'weigher metric pci_rule')):
    """How the capability rooms make a model of a stored definition: each
    a callable (name, definition, generation) -> model.  The composition
    root (deploy.compose) gives the rooms' own: storage knows none of
    them."""


class Store:
    """The graph store: one engine, and a store per resource reached by
    name (``store.providers``, ``store.allocations``, ...), each with the
    operations of its resource and its Cypher beside it."""

    def __init__(self, engine, models):
        self.engine = engine
        self.versions = versioning.VersionStore(engine)
        self.schema = migrations.SchemaStore(engine)
        self.backups = backups.BackupStore(engine)
        self.exports = exports.ExportStore(engine)
        self.resource_classes = resource_classes.ResourceClassStore(engine)
        self.providers = providers.ProviderStore(engine)
        self.traits = traits.TraitStore(engine, self.providers)
        self.aggregates = aggregates.AggregateStore(engine, self.providers)
        self.inventories = inventories.InventoryStore(engine)
        self.allocations = allocations.AllocationStore(engine)
        self.usages = allocations.UsageStore(engine)
        self.reshapes = reshaper.ReshapeStore(engine)
        self.weighers = weighers.weigher_store(engine, models.weigher)
        self.metrics = telemetry.MetricStore(engine, models.metric)
        self.scorers = telemetry.ScorerStore(engine)
        self.pci_affinity = pci_affinity.rule_store(engine, models.pci_rule)
        self.topology = topology.TopologyStore(engine)
        self.changes = feed.FeedStore(engine)
        self.imports = importer.ImportStore(engine)
        self.integrity = integrity.IntegrityStore(engine)
        self.world_reads = world_reads.WorldReadStore(engine)
        self.whatif_sessions = whatif.WhatIfSessionStore(engine)
        self.drift = drift.DriftStore(engine)
        # What the process builds on the store, attached by the
        # composition root (deploy.compose): the copy of the graph
        # (world/cache.py), the candidate search over it
        # (world/candidates.py) and the change feed (feed/service.py).
        self.worlds = self.candidates = self.feed = None
        # What-if sessions (whatif/service.py), set there too.
        self.sessions = None

    def sync(self):
        """Idempotent start-up work: refuse a graph a newer release wrote
        or a restore has not finished (migrations.Refused),
        indexes and constraints, the steps that bring an older graph to
        this release's schema, standard classes and traits, then record
        the schema version.  Returns the steps it ran."""
        # First, before this process writes anything else: every attribute
        # name, in a fixed order (cypher.attribute_registration).
        self.engine.write(cypher.attribute_registration())
        restoring = self.backups.unfinished()
        if restoring is not None:
            raise migrations.RestoreUnfinished(restoring)
        steps = migrations.pending(self.schema.version(creating=True))
        self.engine.ensure_schema()
        for step in steps:
            step.apply(self)
        self.resource_classes.sync(os_resource_classes.STANDARDS)
        self.traits.sync(os_traits.get_traits())
        self.schema.record(schema.SCHEMA_VERSION)
        return steps

    def close(self):
        self.engine.close()


def _unquoted(text):
    return urllib.parse.unquote(text) if text else text


def sentinel_address(uri, sentinel_password=None):
    """(falkordb_engine.Sentinels, the servers' password or None) of
    ``sentinel://[[user]:password@]host[:port],host[:port]/service``
    (a port defaults to the sentinels' 26379; ``[::1]:port`` for IPv6);
    ValueError naming what is wrong."""
    from tachyon_placement.graph import falkordb_engine
    rest = uri.partition('://')[2]
    netloc, _, path = rest.partition('/')
    service = _unquoted(path.partition('?')[0])
    credentials, _, hosts = netloc.rpartition('@')
    password = _unquoted(credentials.partition(':')[2]) or None
    addresses = []
    for host in hosts.split(','):
        if host.startswith('['):
            name, _, port = host[1:].partition(']')
            port = port[1:]
        else:
            name, _, port = host.partition(':')
        if not name:
            raise ValueError('sentinel:// names an empty host: %s' % hosts)
        try:
            addresses.append(
                (name, int(port) if port else falkordb_engine.SENTINEL_PORT))
        except ValueError:
            raise ValueError('sentinel:// port is not a number: %s' % host)
    if not service:
        raise ValueError('sentinel:// needs the name of the primary the '
                         'sentinels monitor: sentinel://host:port/name')
    return falkordb_engine.Sentinels(addresses, service,
                                     sentinel_password), password


def make_engine(conf):
    uri = conf.graph.connection
    if uri:
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme in NEO4J_SCHEMES:
            from tachyon_placement.graph import neo4j_engine
            # The driver refuses credentials in the URI: they go apart.
            bare = parsed._replace(netloc=parsed.netloc.rpartition('@')[2])
            return neo4j_engine.Neo4jEngine(
                bare.geturl(),
                username=conf.graph.username or _unquoted(parsed.username),
                password=conf.graph.password or _unquoted(parsed.password),
                database=conf.graph.database)
        from tachyon_placement.graph import falkordb_engine
        graph = conf.graph.database or FALKORDB_GRAPH
        if parsed.scheme == 'unix':
            return falkordb_engine.FalkorDBEngine(
                graph, unix_socket_path=parsed.path,
                password=conf.graph.password)
        acks = dict(replica_acks=conf.graph.replica_acks,
                    replica_ack_timeout=conf.graph.replica_ack_timeout)
        if parsed.scheme in ('falkor', 'falkordb', 'redis'):
            return falkordb_engine.FalkorDBEngine(
                graph, host=parsed.hostname, port=parsed.port,
                password=conf.graph.password or _unquoted(parsed.password),
                **acks)
        if parsed.scheme == 'sentinel':
            sentinels, password = sentinel_address(
                uri, conf.graph.sentinel_password)
            return falkordb_engine.FalkorDBEngine(
                graph, password=conf.graph.password or password,
                sentinels=sentinels, **acks)
        raise ValueError('Unsupported [graph] connection scheme: %s'
                         % parsed.scheme)
    from tachyon_placement.graph import falkordb_engine
    from tachyon_placement import processes
    server = processes.get_shared_server(
        conf.graph.data_dir, appendfsync=conf.graph.appendfsync)
    return falkordb_engine.FalkorDBEngine(
        conf.graph.database or FALKORDB_GRAPH,
        unix_socket_path=server.ensure_running(),
        revive=server.ensure_running)


def open_engine(conf, read_replica=False):
    """The engine ``[graph] connection`` names.  ``read_replica``: with
    FalkorDB, read a private replica of the graph server
    (graph/replica_reads.py; the feed server)."""
    engine = make_engine(conf)
    if read_replica and engine.dialect == 'falkordb':
        from tachyon_placement.graph import replica_reads
        engine = replica_reads.ReplicaReads(engine)
    return engine
