"""Two graphs compared whole (``tachyon-manage db compare``): a replica
resynced after a failover against its primary, a graph against its
restore, or its copy on the other engine.

Each is read through Engine.frozen (one graph version each, as a backup
reads it).  A node is known by its label and key (a provider's uuid, a
class's name, a Meta node's key, ...) where it has one, else by all of
its properties; a relationship by its ends, type and properties.  Node
ids are not compared: they differ between engines and copies.
"""
import collections
import json

Content = collections.namedtuple('Content', 'graph_version nodes edges')

# The property that keys a node of a label, first found.
_KEYS = ('uuid', 'name', 'key')
# Labels whose nodes several may share a key (a provider deleted twice).
_UNKEYED = ('Tombstone', 'ConsumerTombstone', 'HostTombstone', 'Socket',
            'NUMANode', 'PCIDevice')


def _text(value):
    return json.dumps(value, sort_keys=True, default=str)


def _identity(labels, properties):
    label = ':'.join(sorted(labels))
    if label not in _UNKEYED:
        for key in _KEYS:
            if key in properties:
                return (label, key, _text(properties[key]))
    return (label, _text(properties))


def content(store):
    """The Content of ``store``'s graph: {identity: properties text},
    Counter of (start, type, end, properties text), the graph version."""
    with store.backups.frozen() as frozen:
        graph_version, _schema = store.backups.versions(frozen)
        ids, nodes = {}, collections.Counter()
        for node_id, labels, properties in store.backups.nodes(frozen):
            identity = _identity(labels, properties)
            ids[node_id] = identity
            nodes[(identity, _text(properties))] += 1
        edges = collections.Counter(
            (ids.get(start), kind, ids.get(end), _text(properties))
            for start, kind, end, properties in
            store.backups.relationships(frozen))
    return Content(graph_version, nodes, edges)


def differences(first, second):
    """Lines naming what differs between two Contents (none: equal)."""
    found = []
    if first.graph_version != second.graph_version:
        found.append('graph version: %s != %s'
                     % (first.graph_version, second.graph_version))
    firsts = _by_identity(first.nodes - second.nodes)
    seconds = _by_identity(second.nodes - first.nodes)
    for identity in sorted(set(firsts) | set(seconds)):
        if len(identity) == 3:
            found.append('%s %s=%s: %s != %s' % (
                identity + (firsts.get(identity, 'absent'),
                            seconds.get(identity, 'absent'))))
        else:
            found.append('%s %s: only in the %s' % (
                identity + ('first' if identity in firsts else 'second',)))
    for edge in sorted(first.edges - second.edges, key=str):
        found.append('relationship %s: only in the first' % (edge,))
    for edge in sorted(second.edges - first.edges, key=str):
        found.append('relationship %s: only in the second' % (edge,))
    return found


def _by_identity(nodes):
    return {identity: properties for identity, properties in nodes}


def summary(content_):
    """{label: nodes} and the number of relationships of a Content."""
    labels = collections.Counter()
    for (identity, _properties), count in content_.nodes.items():
        labels[identity[0]] += count
    return dict(labels), sum(content_.edges.values())
