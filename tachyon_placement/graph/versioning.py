"""The graph version: a change counter for read-your-writes caches.

Every write that changes what a provider looks like (its tree position,
inventories, usage, traits, aggregates) bumps ``(:Meta {key: 'graph'})``'s
``version`` once and stamps each provider it changed with the new value
(``rp.stamp``); a deleted provider leaves a ``(:Tombstone {uuid, stamp})``.
A process holding a copy of the graph asks for the version on each request
(one indexed read) and, when it moved, reloads only the providers stamped
after its copy.  FalkorDB runs writes one at a time and Neo4j serialises
them on the Meta node's lock, so stamps follow commit order.
"""
from tachyon_placement.graph.cypher import Statement

# Bumps the version once (place it where the statement has a single row)
# and binds the new value as ``stamp``.
BUMP = """
CALL {
  MERGE (graph_version:Meta {key: 'graph'})
  ON CREATE SET graph_version.version = 0
  SET graph_version.version = graph_version.version + 1
  RETURN graph_version.version AS stamp
}
"""

# The same for templates that go through str.format first.
BUMP_FORMAT = BUMP.replace('{', '{{').replace('}', '}}')

# Stamps every provider named in $stamped (after BUMP).
STAMP_LISTED = """
CALL {
  WITH stamp
  UNWIND $stamped AS stamped_uuid
  MATCH (stamped:ResourceProvider {uuid: stamped_uuid})
  SET stamped.stamp = stamp
}
"""
STAMP_LISTED_FORMAT = STAMP_LISTED.replace('{', '{{').replace('}', '}}')

VERSION = Statement('graph_version', common="""
OPTIONAL MATCH (graph_version:Meta {key: 'graph'})
OPTIONAL MATCH (telemetry:Meta {key: 'telemetry'})
RETURN coalesce(graph_version.version, 0) AS version,
       coalesce(graph_version.full_reload, 0) AS full_reload,
       coalesce(graph_version.weighers, 0) AS weighers,
       coalesce(telemetry.version, 0) AS telemetry
""")


class VersionStore:
    """Mixin of Store: the graph version."""

    def graph_version(self):
        """(version, version of the last change that needs a full reload,
        version of the last change to the weighers, version of the metric
        values (graph/telemetry.py))."""
        row = self.engine.read(VERSION)[0]
        return (row['version'], row['full_reload'], row['weighers'],
                row['telemetry'])
