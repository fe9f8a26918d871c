"""Policy rules for Tachyon's what-if sessions (admin or service)."""
from tachyon_placement.policies import base

OPEN = 'tachyon:sessions:create'
SHOW = 'tachyon:sessions:show'
DISCARD = 'tachyon:sessions:delete'
COMMIT = 'tachyon:sessions:commit'
USE = 'tachyon:sessions:use'
LIST = 'tachyon:sessions:list'
ANY_PROJECT = 'tachyon:sessions:any_project'

rules = base.table((
    (OPEN, base.ADMIN_OR_SERVICE,
     'Open a what-if session: a private overlay of the graph.',
     ['POST /tachyon/sessions']),
    (LIST, base.ADMIN_OR_SERVICE,
     "List the what-if sessions of the token's project (all of them with "
     'tachyon:sessions:any_project).',
     ['GET /tachyon/sessions']),
    (ANY_PROJECT, base.RULE_ADMIN_API,
     "Show, use, commit, discard and list any project's what-if "
     "sessions, not only those the token's project opened (an "
     'administrator cleaning up; a service user of another project sees '
     'them as not found).',
     ['GET /tachyon/sessions', 'GET /tachyon/sessions/{session_id}',
      'DELETE /tachyon/sessions/{session_id}',
      'POST /tachyon/sessions/{session_id}/commit']),
    (SHOW, base.ADMIN_OR_SERVICE,
     'Show what a what-if session changed and read.',
     ['GET /tachyon/sessions/{session_id}']),
    (DISCARD, base.ADMIN_OR_SERVICE,
     'Discard a what-if session.',
     ['DELETE /tachyon/sessions/{session_id}']),
    (COMMIT, base.ADMIN_OR_SERVICE,
     "Write a what-if session's allocations for real.",
     ['POST /tachyon/sessions/{session_id}/commit']),
    (USE, base.ADMIN_OR_SERVICE,
     'Send a request within a what-if session (the '
     'OpenStack-Tachyon-Session header): allocation and inventory reads '
     'and writes, allocation candidates, capacity and explain, against '
     'the session. '
     "The route's own rule applies too.",
     ['GET /allocation_candidates', 'GET /allocations/{consumer_uuid}',
      'PUT /allocations/{consumer_uuid}', 'POST /allocations',
      'DELETE /allocations/{consumer_uuid}',
      'PUT /resource_providers/{uuid}/inventories',
      'DELETE /resource_providers/{uuid}',
      'GET /tachyon/capacity',
      'GET /tachyon/explain/allocation_candidates']),
))


def list_rules():
    return list(rules)
