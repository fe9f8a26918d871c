"""Publishing a host's topology: the document linked to the Placement
providers that represent its parts."""
from tachyon_placement.topology import links as topology_links


def publish(store, hostname, document, generation):
    """Create (``generation`` None) or replace ``hostname``'s topology,
    its parts linked to the providers of the host's tree as they are now;
    the stored Topology (ConcurrentUpdate when ``generation`` moved on)."""
    found = topology_links.link(hostname, document,
                                store.topology.host_providers(hostname))
    return store.topology.put(hostname, document, generation, found)
