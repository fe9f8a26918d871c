"""Policy rules, one module per API resource: Placement's, then those of
Tachyon's own routes (``tachyon:...``).

``list_rules()`` is the ``oslo.policy.policies`` entry point and what
``tachyon_placement.policy.make_enforcer`` registers.  Placement's come
first, in Placement's order, so generated sample files line up.
"""
from tachyon_placement.policies import aggregate
from tachyon_placement.policies import allocation
from tachyon_placement.policies import allocation_candidate
from tachyon_placement.policies import base
from tachyon_placement.policies import capacity
from tachyon_placement.policies import changes
from tachyon_placement.policies import drift
from tachyon_placement.policies import explain
from tachyon_placement.policies import host_weights
from tachyon_placement.policies import inventory
from tachyon_placement.policies import metric
from tachyon_placement.policies import monitoring
from tachyon_placement.policies import pci_affinity
from tachyon_placement.policies import reshaper
from tachyon_placement.policies import resource_class
from tachyon_placement.policies import resource_provider
from tachyon_placement.policies import topology
from tachyon_placement.policies import trait
from tachyon_placement.policies import usage
from tachyon_placement.policies import weigher
from tachyon_placement.policies import whatif

_MODULES = (
    base,
    resource_provider,
    resource_class,
    inventory,
    aggregate,
    usage,
    trait,
    allocation,
    allocation_candidate,
    reshaper,
)


# Tachyon's own routes.
_TACHYON_MODULES = (
    weigher,
    metric,
    explain,
    host_weights,
    capacity,
    whatif,
    drift,
    topology,
    pci_affinity,
    changes,
    monitoring,
)


def placement_rules():
    """Placement's rules: names, defaults and order as Placement's."""
    return [rule for module in _MODULES for rule in module.list_rules()]


def list_rules():
    """Every RuleDefault/DocumentedRuleDefault, in registration order."""
    return placement_rules() + [rule for module in _TACHYON_MODULES
                                for rule in module.list_rules()]
