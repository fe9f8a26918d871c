"""Tachyon's /tachyon/changes: the change feed (tachyon_placement/feed).

- ``GET /tachyon/changes?since=<cursor>&wait=<seconds>&limit=<n>``: the
  changes after the cursor as JSON, waiting up to ``wait`` seconds (at
  most MAX_WAIT) for the first; ``cursor`` in the answer is where to
  resume.  ``since`` absent: nothing, and the current cursor (start a
  mirror by listing, then follow from there).
- ``GET /tachyon/changes/stream``, ``Accept: text/event-stream``: the same
  as Server-Sent Events, one event per change (``id`` its cursor); resumes
  after ``Last-Event-ID`` (or ``since``).
- Filters, on both: ``kind``, ``root``, ``host``, ``member_of``,
  ``resource_class`` (feed/changes.py Filter).  ``kind=drift`` (the drift
  the watcher recorded, usecases/drift.py) is sent only when asked for.
- A cursor older than the retention floor, or ahead of the graph: 410
  ``tachyon.changes.gone``, list again.

Waiting is the feed server's (feed/server.py, ``tachyon-feed``; the
built-in server hands these routes to one of its own): it calls these
handlers for what every request needs (authentication, policy, the
query's checks, the first changes, the 410) with DEFER in the environ, and
a handler that would wait hands a Deferred back instead.  An API worker
never waits: reached directly for a wait or a stream (a deployment that
does not route the feed to its server) it answers 503.
"""
import dataclasses

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.feed import changes as feed_changes
from tachyon_placement.policies import changes as policies

EVENT_STREAM = 'text/event-stream'
MAX_WAIT = 60
MAX_LIMIT = 10000
GONE = 'tachyon.changes.gone'
ELSEWHERE = 'tachyon.changes.elsewhere'
# Set in the environ by the feed server, a dict: a handler that would
# wait hands a Deferred back in it, under 'deferred' (keys the application
# adds to the environ are taken out again: app.ForgetRequest).
DEFER = 'tachyon.feed.defer'

_UUIDS = '^[0-9a-fA-F-]{32,36}(,[0-9a-fA-F-]{32,36}){0,99}$'
QUERY = {
    'type': 'object',
    'properties': {
        'since': {'type': 'string', 'pattern': '^[0-9]{1,18}$'},
        'wait': {'type': 'string', 'pattern': '^[0-9]{1,4}(\\.[0-9]+)?$'},
        'limit': {'type': 'string', 'pattern': '^[1-9][0-9]{0,4}$'},
        'kind': {'type': 'string', 'pattern': '^(%s)(,(%s)){0,9}$' % (
            ('|'.join(sorted(feed_changes.KINDS)),) * 2)},
        'root': {'type': 'string', 'pattern': _UUIDS},
        'member_of': {'type': 'string', 'pattern': _UUIDS},
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'resource_class': {
            'type': 'string',
            'pattern': '^[A-Z0-9_]{1,255}(,[A-Z0-9_]{1,255}){0,99}$'},
    },
    'additionalProperties': False,
}


@dataclasses.dataclass
class Deferred:
    """What the feed server goes on with: a long poll (``stream`` False)
    that found nothing yet, or a stream; ``since`` the client's cursor,
    ``first`` (changes, resume cursor) already found after it."""
    stream: bool
    since: int
    first: tuple
    limit: int
    wanted: feed_changes.Filter
    wait: float = 0.0


def _params(req):
    req.validate_query(QUERY)
    since = req.GET.get('since')
    wait = min(float(req.GET.get('wait', 0)), MAX_WAIT)
    limit = min(int(req.GET.get('limit', MAX_LIMIT)), MAX_LIMIT)
    return (int(since) if since is not None else None), wait, limit


def _listed(req, name, normal=lambda value: value):
    value = req.GET.get(name)
    if value is None:
        return None
    return frozenset(normal(item) for item in value.split(','))


def _uuid(value):
    value = value.lower().replace('-', '')
    if len(value) != 32:
        raise errors.BadRequest('Invalid uuid value: %s' % value)
    return '-'.join((value[:8], value[8:12], value[12:16], value[16:20],
                     value[20:]))


def _filter(req):
    """The Filter of the query (validated by QUERY)."""
    host = req.GET.get('host')
    return feed_changes.Filter(
        kinds=_listed(req, 'kind'),
        roots=_listed(req, 'root', _uuid),
        hosts=frozenset((host,)) if host is not None else None,
        aggregates=_listed(req, 'member_of', _uuid),
        classes=_listed(req, 'resource_class'))


def _gone(exc):
    if isinstance(exc, feed_changes.CursorAhead):
        return errors.Gone(
            'The cursor is ahead of the graph (at %d): it was restored or '
            'imported again. List the providers again and follow the feed '
            'from the cursor of GET /tachyon/changes.' % exc.head, code=GONE)
    return errors.Gone(
        'The cursor is older than the changes kept (from %d on): list '
        'the providers again and follow the feed from the cursor of '
        'GET /tachyon/changes.' % exc.floor, code=GONE)


def _elsewhere():
    return errors.ServiceUnavailable(
        'Waiting for changes is served by the feed server (tachyon-feed), '
        'not by the API workers: route /tachyon/changes to it, or ask '
        'without wait.', code=ELSEWHERE)


def _defer(req, deferred):
    """Hand ``deferred`` to the feed server; 503 in an API worker."""
    slot = req.environ.get(DEFER)
    if slot is None:
        raise _elsewhere()
    slot['deferred'] = deferred


def _changes(feed, since, limit, wanted):
    try:
        return feed.changes(since, limit, wanted)
    except feed_changes.CursorGone as exc:
        raise _gone(exc)


@tachyon.handler(accept=wsgi.JSON, uses=('feed',))
def list_changes(req):
    req.context.can(policies.LIST)
    since, wait, limit = _params(req)
    wanted = _filter(req)
    feed = req.store.feed
    if since is None:
        return wsgi.json_response(req, {'cursor': feed.head(),
                                        'changes': []})
    found = _changes(feed, since, limit, wanted)
    if not found[0] and wait > 0:
        _defer(req, Deferred(False, since, found, limit, wanted, wait))
    response = req.response
    response.status = 200
    response.body = list_body(feed, since, found, wanted)
    response.content_type = wsgi.JSON
    return response


def list_body(feed, since, found, wanted):
    """The JSON answer of a long poll: the changes, encoded and joined once
    for all subscribers at the same place."""
    changes, cursor = found
    return b'{"cursor":%d,"changes":[%s]}' % (
        cursor, feed.json.of(since, changes, wanted))


@tachyon.handler(accept=EVENT_STREAM, uses=('feed',))
def stream_changes(req):
    # Only a client that asks for a stream gets one (EventSource sends
    # this Accept); */* or none would hold a connection open by mistake.
    if EVENT_STREAM not in req.headers.get('Accept', ''):
        raise errors.NotAcceptable('Only %s is provided' % EVENT_STREAM)
    req.context.can(policies.LIST)
    since, _wait, limit = _params(req)
    wanted = _filter(req)
    last_id = req.headers.get('Last-Event-ID')
    if last_id is not None:
        # ASCII digits, as many as a cursor can have (str.isdigit takes
        # '²', which int() refuses).
        if not (last_id.isascii() and last_id.isdigit()
                and len(last_id) <= 18):
            raise errors.BadRequest('Last-Event-ID must be a cursor.')
        since = int(last_id)
    feed = req.store.feed
    if since is None:
        since = feed.head()
    # Before the stream starts: a gone cursor is a 410, not an event.
    found = _changes(feed, since, limit, wanted)
    _defer(req, Deferred(True, since, found, limit, wanted))
    response = req.response
    response.status = 200
    response.content_type = EVENT_STREAM
    response.cache_control = 'no-cache'
    response.headers['X-Accel-Buffering'] = 'no'
    return response
