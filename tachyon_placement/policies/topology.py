"""Policy rules for Tachyon's /tachyon/topology (admin or service: the
topology agent publishes as a service user, Watcher and capacity tools
read as one)."""
from tachyon_placement.policies import base

PREFIX = 'tachyon:topology:%s'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, "List hosts' topologies.",
     ['GET /tachyon/topology/hosts']),
    (SHOW, base.ADMIN_OR_SERVICE, "Show a host's topology view.",
     ['GET /tachyon/topology/hosts/{name}']),
    (UPDATE, base.ADMIN_OR_SERVICE, "Publish a host's topology.",
     ['PUT /tachyon/topology/hosts/{name}']),
    (DELETE, base.ADMIN_OR_SERVICE, "Delete a host's topology.",
     ['DELETE /tachyon/topology/hosts/{name}']),
))


def list_rules():
    return list(rules)
