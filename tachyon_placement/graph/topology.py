"""Hosts' topologies beside the providers (see tachyon_placement/topology).

    (:Host {name, generation, document, created_at, updated_at})
      -[:HAS_SOCKET]->(:Socket {host, id})
      -[:HAS_NUMA_NODE]->(:NUMANode {host, id, socket, cpus, memory_mb,
                                     hugepages, distances, provider_uuid})
      -[:HAS_DEVICE]->(:PCIDevice {host, address, vendor_id, product_id,
                                   class, numa_node, physfn, ...,
                                   provider_uuid})
    (:NUMANode)-[:IN_SOCKET]->(:Socket)
    (:PCIDevice)-[:ON_NUMA_NODE]->(:NUMANode)
    (:PCIDevice {PF})-[:HAS_VF]->(:PCIDevice {VF})
    (:Host|NUMANode|PCIDevice)-[:REPRESENTED_BY]->(:ResourceProvider)

``document`` keeps the published document (JSON) as it was given, for
the topology view; the nodes are what graph queries walk.  A PUT replaces
the host's whole subgraph in one statement, guarded by the host's
generation like a provider's; the links to providers are decided in
Python (topology/links.py) from the host's provider tree and renewed at
each publication.
"""
import collections
import json

from tachyon_placement.domain import errors
from tachyon_placement.graph import cypher
from tachyon_placement.graph import engine
from tachyon_placement.graph import schema
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement

_RETURN = """
RETURN host.name AS name, host.generation AS generation,
       host.document AS document, host.created_at AS created_at,
       host.updated_at AS updated_at
"""

# Builds the parts of ``host`` from $sockets, $numa_nodes, $devices and
# links them to each other (devices to NUMA nodes and VFs to PFs by their
# positions in id and address order, $device_numa and $vf_of, computed in
# Python: matching every device with every other made a publication of
# 8,192 devices quadratic, 15.6 s under FalkorDB's write lock) and to
# their providers (looked up by a value
# of their own, and $host_provider by coalesce: FalkorDB joined a part's
# property with a scan of every provider, and scans them all for a null
# in a property map, see graph/providers.py CREATE).
_PARTS = """
CALL {
  WITH host
  UNWIND $sockets AS socket_row
  CREATE (host)-[:HAS_SOCKET]->(:Socket {host: $name, id: socket_row.id})
  RETURN count(*) AS sockets_made
}
CALL {
  WITH host
  UNWIND $numa_nodes AS node_row
  CREATE (host)-[:HAS_NUMA_NODE]->(:NUMANode {
      host: $name, kind: 'numa', id: node_row.id, socket: node_row.socket,
      cpus: node_row.cpus, memory_mb: node_row.memory_mb,
      hugepages: node_row.hugepages, distances: node_row.distances,
      provider_uuid: node_row.provider_uuid})
  RETURN count(*) AS nodes_made
}
CALL {
  WITH host
  MATCH (host)-[:HAS_NUMA_NODE]->(node:NUMANode)
  MATCH (host)-[:HAS_SOCKET]->(socket:Socket)
  WHERE socket.id = node.socket
  CREATE (node)-[:IN_SOCKET]->(socket)
  RETURN count(*) AS nodes_placed
}
CALL {
  WITH host
  UNWIND $devices AS device_row
  CREATE (host)-[:HAS_DEVICE]->(:PCIDevice {
      host: $name, kind: 'pci', address: device_row.address,
      vendor_id: device_row.vendor_id, product_id: device_row.product_id,
      class: device_row.class, numa_node: device_row.numa_node,
      physfn: device_row.physfn, sriov_totalvfs: device_row.sriov_totalvfs,
      sriov_numvfs: device_row.sriov_numvfs, driver: device_row.driver,
      interfaces: device_row.interfaces,
      physical_network: device_row.physical_network,
      provider_uuid: device_row.provider_uuid})
  RETURN count(*) AS devices_made
}
CALL {
  WITH host
  MATCH (host)-[:HAS_NUMA_NODE]->(node:NUMANode)
  WITH host, node ORDER BY node.id
  WITH host, collect(node) AS nodes
  MATCH (host)-[:HAS_DEVICE]->(device:PCIDevice)
  WITH nodes, device ORDER BY device.address
  WITH nodes, collect(device) AS devices
  UNWIND $device_numa AS placed
  WITH devices[placed[0]] AS device, nodes[placed[1]] AS node
  CREATE (device)-[:ON_NUMA_NODE]->(node)
  RETURN count(*) AS devices_placed
}
CALL {
  WITH host
  MATCH (host)-[:HAS_DEVICE]->(device:PCIDevice)
  WITH device ORDER BY device.address
  WITH collect(device) AS devices
  UNWIND $vf_of AS pair
  WITH devices[pair[0]] AS pf, devices[pair[1]] AS vf
  CREATE (pf)-[:HAS_VF]->(vf)
  RETURN count(*) AS vfs_linked
}
CALL {
  WITH host
  MATCH (host)-[:HAS_NUMA_NODE|HAS_DEVICE]->(part)
  WHERE part.provider_uuid IS NOT NULL
  WITH part, part.provider_uuid AS wanted
  MATCH (rp:ResourceProvider {uuid: wanted})
  CREATE (part)-[:REPRESENTED_BY]->(rp)
  RETURN count(*) AS parts_linked
}
CALL {
  WITH host
  MATCH (rp:ResourceProvider {uuid: coalesce($host_provider, '')})
  CREATE (host)-[:REPRESENTED_BY]->(rp)
  RETURN count(*) AS host_linked
}
"""

# A publication moves the graph version and records it on the Meta node
# (``topology``) and on the host (``stamp``), so each API process reloads
# the topologies that changed with its next copy of the graph (affinity).
_STAMP = """
MATCH (stamped_meta:Meta {key: 'graph'})
SET stamped_meta.topology = stamp
"""

CREATE = Statement('topology_create', common="""
OPTIONAL MATCH (existing:Host {name: $name})
WITH existing WHERE existing IS NULL
%s
%s
CREATE (host:Host {name: $name, generation: 0, document: $document,
                   stamp: stamp, created_at: timestamp(),
                   updated_at: timestamp()})
WITH host
%s
%s""" % (versioning.BUMP, _STAMP, _PARTS, _RETURN), guarded=True)


def _replace_text(dialect):
    return """
MATCH (host:Host {name: $name})
%s
WITH host WHERE host.generation = $generation
%s
%s
SET host.generation = host.generation + 1, host.updated_at = timestamp(),
    host.document = $document, host.stamp = stamp
WITH host
CALL {
  WITH host
  OPTIONAL MATCH (host)-[:HAS_SOCKET|HAS_NUMA_NODE|HAS_DEVICE]->(part)
  DETACH DELETE part
  RETURN count(*) AS parts_removed
}
CALL {
  WITH host
  OPTIONAL MATCH (host)-[old_link:REPRESENTED_BY]->()
  DELETE old_link
  RETURN count(*) AS links_removed
}
%s
%s""" % (cypher.write_lock('host', dialect), versioning.BUMP, _STAMP, _PARTS,
         _RETURN)


REPLACE = Statement('topology_replace', neo4j=_replace_text('neo4j'),
                    falkordb=_replace_text('falkordb'), guarded=True)

DELETE = Statement('topology_delete', common="""
MATCH (host:Host {name: $name})
%s
%s
CREATE (:HostTombstone {name: $name, stamp: stamp})
WITH host
OPTIONAL MATCH (host)-[:HAS_SOCKET|HAS_NUMA_NODE|HAS_DEVICE]->(part)
DETACH DELETE part, host
RETURN count(*) AS deleted
""" % (versioning.BUMP, _STAMP))

# What affinity needs of the topologies published (or deleted) after
# $since: each host's document and links (see topology/affinity.py).
CHANGED = Statement('topology_changed', common="""
MATCH (host:Host) WHERE host.stamp > $since
OPTIONAL MATCH (host)-[:HAS_NUMA_NODE|HAS_DEVICE]->(part)
      -[:REPRESENTED_BY]->(rp:ResourceProvider)
OPTIONAL MATCH (host)-[:REPRESENTED_BY]->(root:ResourceProvider)
RETURN host.name AS name, host.stamp AS stamp, host.document AS document,
       host.generation AS generation, root.uuid AS root_uuid,
       collect([part.kind, part.id, part.address, rp.uuid]) AS links
""")

GONE = Statement('topology_gone', common="""
MATCH (gone:HostTombstone) WHERE gone.stamp > $since
RETURN gone.name AS name, gone.stamp AS stamp
""")

GET = Statement('topology_get', common="""
MATCH (host:Host {name: $name})
%s""" % _RETURN)

# The providers a host's parts are linked to now (a provider deleted
# since the publication took its links with it).
LINKS = Statement('topology_links', common="""
MATCH (host:Host {name: $name})-[:HAS_NUMA_NODE|HAS_DEVICE]->(part)
      -[:REPRESENTED_BY]->(rp:ResourceProvider)
RETURN part.kind AS kind, part.id AS id, part.address AS address,
       rp.uuid AS provider_uuid
UNION ALL
MATCH (host:Host {name: $name})-[:REPRESENTED_BY]->(rp:ResourceProvider)
RETURN 'host' AS kind, null AS id, null AS address,
       rp.uuid AS provider_uuid
""")

TREE = Statement('topology_provider_tree', common="""
MATCH (root:ResourceProvider {name_key: $name_key})
WHERE root.parent_uuid IS NULL
WITH root.uuid AS tree
MATCH (rp:ResourceProvider {root_uuid: tree})
OPTIONAL MATCH (rp)-[:HAS_TRAIT]->(trait:Trait)
RETURN rp.uuid AS uuid, rp.name AS name, rp.parent_uuid AS parent_uuid,
       collect(trait.name) AS traits
""")


class Topology:
    """A stored topology: its host name, generation, document and times."""

    def __init__(self, name, generation, document, created_at, updated_at,
                 links=None):
        self.name = name
        self.generation = generation
        self.document = document
        self.created_at = created_at
        self.updated_at = updated_at
        self.links = links


# A provider of a host's tree as the topology room links parts to it
# (topology/links.py), and what it found: the root provider's uuid, {NUMA
# node id: provider uuid}, {PCI address: provider uuid}.
HostProvider = collections.namedtuple('HostProvider',
                                      'uuid name parent_uuid traits')
Links = collections.namedtuple('Links', 'host numa pci')


def _links_of(host_uuid, parts):
    """Links from the root's uuid and the linked parts,
    (kind, NUMA node id, PCI address, provider uuid); other kinds (the
    host's own row, an empty OPTIONAL MATCH) are skipped."""
    found = Links(host_uuid, {}, {})
    for kind, node_id, address, uuid in parts:
        if kind == 'numa':
            found.numa[node_id] = uuid
        elif kind == 'pci':
            found.pci[address] = uuid
    return found


def _positions(document):
    """$device_numa: [device, NUMA node] and $vf_of: [PF, VF] pairs of
    positions, devices in address order and NUMA nodes in id order (as
    the statement collects them)."""
    devices = sorted(document['pci_devices'], key=lambda d: d['address'])
    at_address = {device['address']: index
                  for index, device in enumerate(devices)}
    node_at = {node['id']: index for index, node in enumerate(
        sorted(document['numa_nodes'], key=lambda node: node['id']))}
    device_numa, vf_of = [], []
    for index, device in enumerate(devices):
        if device.get('numa_node') in node_at:
            device_numa.append([index, node_at[device['numa_node']]])
        if device.get('physfn') in at_address:
            vf_of.append([at_address[device['physfn']], index])
    return {'device_numa': device_numa, 'vf_of': vf_of}


def _topology(row):
    return Topology(row['name'], row['generation'],
                    json.loads(row['document']), row['created_at'],
                    row['updated_at'])


class TopologyStore(engine.ResourceStore):
    """Store.topology: hosts' topologies."""

    def host_providers(self, hostname):
        """The providers of the tree whose root is named ``hostname``, as
        HostProvider tuples."""
        return [HostProvider(row['uuid'], row['name'], row['parent_uuid'],
                             frozenset(row['traits']))
                for row in self.engine.read(
                    TREE, name_key=schema.name_key(hostname))]

    def put(self, hostname, document, generation, found):
        """Create (``generation`` None) or replace (at ``generation``)
        ``hostname``'s topology, linked to the providers that represent
        its parts (``found``, Links); the stored Topology
        (ConcurrentUpdate otherwise)."""
        params = {
            'name': hostname,
            'document': json.dumps(document, sort_keys=True),
            'host_provider': found.host,
            'sockets': [{'id': s['id']} for s in document['sockets']],
            'numa_nodes': [{
                'id': node['id'], 'socket': node.get('socket'),
                'cpus': node['cpus'], 'memory_mb': node['memory_mb'],
                'hugepages': json.dumps(node.get('hugepages', [])),
                'distances': json.dumps(node.get('distances', {}),
                                        sort_keys=True),
                'provider_uuid': found.numa.get(node['id'])}
                for node in document['numa_nodes']],
            'devices': [dict(
                {key: device.get(key) for key in (
                    'vendor_id', 'product_id', 'class', 'numa_node',
                    'physfn', 'sriov_totalvfs', 'sriov_numvfs', 'driver',
                    'physical_network')},
                address=device['address'],
                interfaces=list(device.get('interfaces') or ()),
                provider_uuid=found.pci.get(device['address']))
                for device in document['pci_devices']],
        }
        params.update(_positions(document))
        try:
            if generation is None:
                rows = self.engine.write(CREATE, **params)
            else:
                rows = self.engine.write(REPLACE, generation=generation,
                                         **params)
        except engine.ConstraintViolation:
            rows = []   # another writer created it first
        if not rows:
            raise errors.ConcurrentUpdate(
                'The topology of host %s was published or changed by '
                'another request: read it again and retry with its '
                'generation.' % hostname)
        return self.get(hostname)

    def get(self, hostname):
        rows = self.engine.read(GET, name=hostname)
        if not rows:
            raise errors.NotFound('No topology of host %s.' % hostname)
        topology = _topology(rows[0])
        topology.links = self._links(hostname)
        return topology

    def delete(self, hostname):
        rows = self.engine.write(DELETE, name=hostname)
        if not (rows and rows[0]['deleted']):
            raise errors.NotFound('No topology of host %s.' % hostname)

    def changes(self, since):
        """(changed, gone) since graph version ``since``: [(host name,
        stamp, generation, document, Links)] and [(host name, stamp)]."""
        changed = [(row['name'], row['stamp'], row['generation'],
                    json.loads(row['document']),
                    _links_of(row['root_uuid'], row['links']))
                   for row in self.engine.read(CHANGED, since=since)]
        gone = [(row['name'], row['stamp'])
                for row in self.engine.read(GONE, since=since)]
        return changed, gone

    def _links(self, hostname):
        parts = [(row['kind'], row['id'], row['address'],
                  row['provider_uuid'])
                 for row in self.engine.read(LINKS, name=hostname)]
        host = next((uuid for kind, _i, _a, uuid in parts
                     if kind == 'host'), None)
        return _links_of(host, parts)
