"""Policy rules for provider usages and project/user total usages.

``placement:usages`` is the one rule with an owner check: a project reader
may see the usages of its own project (the handler passes
``target={'project_id': <queried project>}``), admins and services any.
"""
from tachyon_placement.policies import base

PROVIDER_USAGES = 'placement:resource_providers:usages'
TOTAL_USAGES = 'placement:usages'

rules = base.table((
    (PROVIDER_USAGES, base.ADMIN_OR_SERVICE, 'List resource provider usages.',
     ['GET /resource_providers/{uuid}/usages']),
    (TOTAL_USAGES, base.ADMIN_OR_PROJECT_READER_OR_SERVICE,
     'List total resource usages for a given project.',
     ['GET /usages']),
))


def list_rules():
    return list(rules)
