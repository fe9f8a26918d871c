"""Tachyon's /tachyon/pci_affinity: the operator's PCI-NUMA affinity
rules, which allocation candidates respect (topology/affinity.py)."""
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import pci_affinity as policies
from tachyon_placement.schemas import pci_affinity as schema
from tachyon_placement.topology import affinity


@tachyon.handler(accept=wsgi.JSON)
def list_rules(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'rules': [
        rule.as_document()
        for rule in req.store.list_pci_affinity_rules()]})


@tachyon.handler(accept=wsgi.JSON)
def get_rule(req):
    req.context.can(policies.SHOW)
    rule = tachyon.found(req.store.get_pci_affinity_rule,
                         tachyon.name(req, 'rule'))
    return wsgi.json_response(req, rule.as_document())


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON)
def put_rule(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'rule')
    data = req.json_body(schema.PUT)
    return tachyon.stored(req, req.store.put_pci_affinity_rule,
                          affinity.Rule.from_document(name, data),
                          data.get('generation'))


@tachyon.handler()
def delete_rule(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.delete_pci_affinity_rule,
                  tachyon.name(req, 'rule'))
    return wsgi.empty_response(req)
