"""Placement's policy rules, one module per API resource.

``list_rules()`` is the ``oslo.policy.policies`` entry point and what
``tachyon_placement.policy.make_enforcer`` registers.  The order matches
Placement's so generated sample files line up.
"""
from tachyon_placement.policies import aggregate
from tachyon_placement.policies import allocation
from tachyon_placement.policies import allocation_candidate
from tachyon_placement.policies import base
from tachyon_placement.policies import inventory
from tachyon_placement.policies import reshaper
from tachyon_placement.policies import resource_class
from tachyon_placement.policies import resource_provider
from tachyon_placement.policies import trait
from tachyon_placement.policies import usage

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


def list_rules():
    """Every RuleDefault/DocumentedRuleDefault, in registration order."""
    return [rule for module in _MODULES for rule in module.list_rules()]
