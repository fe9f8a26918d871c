"""Tachyon's drift routes (usecases/drift.py):

- ``GET /tachyon/drift``: the consumers whose placement breaks a stored
  weigher threshold or PCI-NUMA affinity rule now, and why.
- ``GET /tachyon/drift/changes?since=<cursor>``: the drift the watcher
  recorded (each refresh of the telemetry collector that holds the lease)
  that changed after the cursor: a consumer that drifted or whose reasons
  changed (``drifted`` true) or whose drift ended (false), each with its
  cursor on the change feed's clock; ``cursor`` where to resume.
  ``since`` absent: the drift recorded now.  A cursor older than the
  feed's floor, or ahead of the graph: 410 ``tachyon.changes.gone``.
"""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import changes as changes_handler
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import drift as policies
from tachyon_placement.usecases import drift

CHANGES_QUERY = {
    'type': 'object',
    'properties': {
        'since': {'type': 'string', 'pattern': '^[0-9]{1,18}$'},
    },
    'additionalProperties': False,
}


@tachyon.handler(accept=wsgi.JSON, uses=('worlds', 'allocations'))
def get_drift(req):
    req.context.can(policies.SHOW)
    req.validate_query({'type': 'object', 'additionalProperties': False})
    return wsgi.json_response(req, drift.report(
        req.store, req.conf.telemetry.staleness_limit))


@tachyon.handler(accept=wsgi.JSON,
                 uses=('worlds', 'drift', 'versions', 'changes'))
def get_drift_changes(req):
    req.context.can(policies.SHOW)
    req.validate_query(CHANGES_QUERY)
    since = req.GET.get('since')
    try:
        found = drift.changes(req.store,
                              int(since) if since is not None else None)
    except drift.CursorGone as exc:
        if exc.head is not None:
            raise errors.Gone(
                'The cursor is ahead of the graph (at %d): it was restored '
                'or imported again. Read GET /tachyon/drift/changes without '
                'since and follow from its cursor.' % exc.head,
                code=changes_handler.GONE)
        raise errors.Gone(
            'The cursor is older than the changes kept (from %d on): read '
            'GET /tachyon/drift/changes without since and follow from its '
            'cursor.' % exc.floor, code=changes_handler.GONE)
    return wsgi.json_response(req, found)
