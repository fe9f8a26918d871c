"""Policy rule for the weights of hosts for a request (admin or service:
Nova's scheduler weigher asks with Nova's [placement] service user, the
one that lists allocation candidates)."""
from tachyon_placement.policies import base

WEIGH = 'tachyon:host_weights:weigh'

rules = base.table((
    (WEIGH, base.ADMIN_OR_SERVICE,
     "Weigh hosts for an allocation candidates request by the stored "
     "weighers that apply to it: each host's combined score and whether "
     "a weigher's threshold bars it (Nova's scheduler weigher, "
     "tachyon_placement.nova).",
     ['POST /tachyon/host_weights']),
))


def list_rules():
    return list(rules)
