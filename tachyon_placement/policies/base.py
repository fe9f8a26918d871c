"""Base (generic) policy rules and the helpers the resource tables use.

The resource modules describe their rules as small tables of
``(name, check_str, description, operations)`` rows; :func:`table` turns a
table into ``DocumentedRuleDefault`` objects, all scoped to ``project`` as in
Placement 16.0.0.

The generic rules below are what the per-resource rules point at.  All but
``admin_api`` carry the Wallaby deprecation of the old ``role:admin``
default, so with ``[oslo_policy] enforce_new_defaults = False`` every
non-default check is OR-ed with ``role:admin`` (legacy RBAC), while with
``enforce_new_defaults = True`` only the new check strings apply.
"""
from oslo_log import versionutils
from oslo_policy import policy

PROJECT_SCOPE = ('project',)

# Check strings referenced by the resource tables.
ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api')
RULE_ADMIN_API = 'rule:admin_api'

_DEPRECATED_REASON = """
Placement API policies are introducing new default roles with scope_type
capabilities. Old policies are deprecated and silently going to be ignored
in the placement 6.0.0 (Xena) release.
"""

# The pre-Wallaby default every generic rule (except admin_api) replaced.
DEPRECATED_ADMIN_POLICY = policy.DeprecatedRule(
    name=RULE_ADMIN_API,
    check_str='role:admin',
    deprecated_reason=_DEPRECATED_REASON,
    deprecated_since=versionutils.deprecated.WALLABY,
)

# name, check_str, description, scope_types, replaces the legacy admin rule
_GENERIC = (
    ('admin_api', 'role:admin',
     'Default rule for most placement APIs.', PROJECT_SCOPE, False),
    ('service_api', 'role:service',
     'Default rule for service-to-service placement APIs.', PROJECT_SCOPE,
     True),
    ('admin_or_service_api', 'role:admin or role:service',
     'Default rule for most placement APIs.', PROJECT_SCOPE, True),
    # NOTE: upstream registers this one without scope_types.
    ('project_reader_api', 'role:reader and project_id:%(project_id)s',
     'Default rule for Project level reader APIs.', None, True),
    ('admin_or_project_reader_or_service_api',
     'role:admin or rule:project_reader_api or role:service',
     'Default rule for project level reader APIs.', PROJECT_SCOPE, True),
)


def _generic_rule(name, check_str, description, scope_types, deprecated):
    kwargs = {'description': description}
    if scope_types is not None:
        kwargs['scope_types'] = list(scope_types)
    if deprecated:
        kwargs['deprecated_rule'] = DEPRECATED_ADMIN_POLICY
    return policy.RuleDefault(name, check_str, **kwargs)


def _operation(spec):
    method, path = spec.split(' ', 1)
    return {'method': method, 'path': path}


def table(rows, scope_types=PROJECT_SCOPE):
    """Build DocumentedRuleDefaults from ``(name, check, doc, ops)`` rows.

    ``ops`` is an iterable of ``"METHOD /path"`` strings.
    """
    return [
        policy.DocumentedRuleDefault(
            name=name,
            check_str=check_str,
            description=description,
            operations=[_operation(op) for op in operations],
            scope_types=list(scope_types),
        )
        for name, check_str, description, operations in rows
    ]


rules = [_generic_rule(*row) for row in _GENERIC]


def list_rules():
    return list(rules)
