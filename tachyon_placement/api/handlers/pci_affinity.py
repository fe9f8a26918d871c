"""Tachyon's /tachyon/pci_affinity: the operator's PCI-NUMA affinity
rules, which allocation candidates respect (topology/affinity.py)."""
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import pci_affinity as policies
from tachyon_placement.schemas import pci_affinity as schema
from tachyon_placement.topology import affinity


@tachyon.handler(accept=wsgi.JSON, uses=('pci_affinity',))
def list_rules(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'rules': [
        rule.as_document()
        for rule in req.store.pci_affinity.list()]})


@tachyon.handler(accept=wsgi.JSON, uses=('pci_affinity',))
def get_rule(req):
    req.context.can(policies.SHOW)
    rule = tachyon.found(req.store.pci_affinity.get,
                         tachyon.name(req, 'rule'))
    return wsgi.json_response(req, rule.as_document())


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON, uses=('pci_affinity',))
def put_rule(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'rule')
    data = req.json_body(schema.PUT)
    return tachyon.stored(req, req.store.pci_affinity.put,
                          affinity.Rule.from_document(name, data),
                          data.get('generation'))


@tachyon.handler(uses=('pci_affinity',))
def delete_rule(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.pci_affinity.delete,
                  tachyon.name(req, 'rule'))
    return wsgi.empty_response(req)
