"""The topology agent's work: read this host's topology from sysfs and
publish it to Tachyon (PUT /tachyon/topology/hosts/{host}) when it
changed.  cmd/topology_agent.py wraps it in a console script.

Talks to Tachyon through a keystoneauth1 Adapter (service type
``placement``, as Nova's report client does), so the endpoint comes from
the Keystone catalog or ``endpoint_override``, the token from whatever
auth plugin the ``[placement]`` section names (``password`` with
Keystone; ``admin_token`` with a fixed token and endpoint on a noauth2
deployment).
"""
import logging

from tachyon_placement.topology import model
from tachyon_placement.topology import sysfs

LOG = logging.getLogger(__name__)

API_VERSION = 'tachyon 1.0'
# A publication retried after a 409 (another publisher moved the
# generation) at most this many times.
CONFLICT_RETRIES = 3


class PublishError(Exception):
    pass


class Publisher:
    """Publishes one host's topology through ``adapter`` (a keystoneauth1
    Adapter, or anything with its get/put)."""

    def __init__(self, adapter, hostname, reader):
        self.adapter = adapter
        self.hostname = hostname
        self.reader = reader
        self.path = '/tachyon/topology/hosts/%s' % hostname

    def _headers(self):
        return {'OpenStack-API-Version': API_VERSION,
                'Accept': 'application/json'}

    def _current(self):
        """(generation, document) stored now, or (None, None); the
        document None also when it links to no compute node provider (the
        host registered with Nova after its last publication: publishing
        again links it)."""
        response = self.adapter.get(self.path, headers=self._headers(),
                                    raise_exc=False)
        if response.status_code == 404:
            return None, None
        if response.status_code != 200:
            raise PublishError('GET %s: %s %s' % (
                self.path, response.status_code, response.text[:500]))
        view = response.json()
        stored = {
            'sockets': [{'id': s['id']} for s in view['sockets']],
            'numa_nodes': [{key: node[key] for key in node
                            if key not in ('provider_uuid', 'free',
                                           'pci_devices')}
                           for node in view['numa_nodes']],
            'pci_devices': [{key: device[key] for key in device
                             if key not in ('provider_uuid', 'free', 'vfs')}
                            for device in view['pci_devices']],
        }
        if view['root_provider_uuid'] is None:
            stored = None
        return view['generation'], stored

    def publish_once(self):
        """Read sysfs and publish if the stored topology differs; what
        happened: 'created', 'updated' or 'unchanged'."""
        document = model.normalized(self.reader.document())
        model.check(document)
        for _attempt in range(CONFLICT_RETRIES + 1):
            generation, stored = self._current()
            if stored is not None and model.normalized(stored) == document:
                return 'unchanged'
            body = dict(document, generation=generation)
            response = self.adapter.put(self.path, json=body,
                                        headers=self._headers(),
                                        raise_exc=False)
            if response.status_code in (200, 201):
                return 'created' if response.status_code == 201 else (
                    'updated')
            if response.status_code != 409:
                raise PublishError('PUT %s: %s %s' % (
                    self.path, response.status_code, response.text[:500]))
            LOG.info('topology of %s changed meanwhile; reading it again',
                     self.hostname)
        raise PublishError('PUT %s: still conflicting after %d attempts'
                           % (self.path, CONFLICT_RETRIES + 1))


def reader_for(sysfs_root, mappings):
    """A SysfsReader for ``sysfs_root`` with ``physnet:interface``
    mappings (Neutron's physical_device_mappings form)."""
    by_interface = {}
    for mapping in mappings or ():
        physnet, _, interface = mapping.partition(':')
        if physnet and interface:
            by_interface[interface] = physnet
    return sysfs.SysfsReader(sysfs_root, by_interface)
