"""Tachyon's /tachyon/changes: the change feed (tachyon_placement/feed).

- ``GET /tachyon/changes?since=<cursor>&wait=<seconds>&limit=<n>``: the
  changes after the cursor as JSON, waiting up to ``wait`` seconds (at
  most MAX_WAIT) for the first; ``cursor`` in the answer is where to
  resume.  ``since`` absent: nothing, and the current cursor (start a
  mirror by listing, then follow from there).
- ``GET /tachyon/changes/stream``, ``Accept: text/event-stream``: the same
  as Server-Sent Events, one event per change (``id`` its cursor), a
  comment line every HEARTBEAT seconds; resumes after ``Last-Event-ID``
  (or ``since``).
- A cursor older than the retention floor: 410 ``tachyon.changes.gone``,
  list again.
"""
import time

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.feed import changes as feed_changes
from tachyon_placement.feed import service as feed_service
from tachyon_placement.policies import changes as policies

EVENT_STREAM = 'text/event-stream'
MAX_WAIT = 60
MAX_LIMIT = 10000
HEARTBEAT = 15
# How long one Server-Sent Events response streams before it ends (the
# client reconnects with Last-Event-ID): a worker thread is never held
# for ever.
STREAM_SECONDS = 300
GONE = 'tachyon.changes.gone'

QUERY = {
    'type': 'object',
    'properties': {
        'since': {'type': 'string', 'pattern': '^[0-9]{1,18}$'},
        'wait': {'type': 'string', 'pattern': '^[0-9]{1,4}(\\.[0-9]+)?$'},
        'limit': {'type': 'string', 'pattern': '^[1-9][0-9]{0,4}$'},
    },
    'additionalProperties': False,
}


def _params(req):
    req.validate_query(QUERY)
    since = req.GET.get('since')
    wait = min(float(req.GET.get('wait', 0)), MAX_WAIT)
    limit = min(int(req.GET.get('limit', MAX_LIMIT)), MAX_LIMIT)
    return (int(since) if since is not None else None), wait, limit


def _gone(exc):
    return errors.Gone(
        'The cursor is older than the changes kept (from %d on): list '
        'the providers again and follow the feed from the cursor of '
        'GET /tachyon/changes.' % exc.floor, code=GONE)


@tachyon.handler(accept=wsgi.JSON)
def list_changes(req):
    req.context.can(policies.LIST)
    since, wait, limit = _params(req)
    feed = req.store.feed
    if since is None:
        cursor = req.store.worlds.current(whole=True).complete
        return wsgi.json_response(req, {'cursor': cursor, 'changes': []})
    try:
        found, cursor = feed.wait(since, wait, limit)
    except feed_changes.CursorGone as exc:
        raise _gone(exc)
    # Encoded and joined once for all subscribers at the same place.
    response = req.response
    response.status = 200
    response.body = b'{"cursor":%d,"changes":[%s]}' % (
        cursor, feed.json.of(since, found))
    response.content_type = wsgi.JSON
    return response


@tachyon.handler(accept=EVENT_STREAM)
def stream_changes(req):
    # Only a client that asks for a stream gets one (EventSource sends
    # this Accept); */* or none would hold a connection open by mistake.
    if EVENT_STREAM not in req.headers.get('Accept', ''):
        raise errors.NotAcceptable('Only %s is provided' % EVENT_STREAM)
    req.context.can(policies.LIST)
    since, _wait, limit = _params(req)
    last_id = req.headers.get('Last-Event-ID')
    if last_id is not None:
        # ASCII digits, as many as a cursor can have (str.isdigit takes
        # '²', which int() refuses).
        if not (last_id.isascii() and last_id.isdigit()
                and len(last_id) <= 18):
            raise errors.BadRequest('Last-Event-ID must be a cursor.')
        since = int(last_id)
    feed = req.store.feed
    # After sending changes a stream reads the log again at the next
    # multiple of ``pace`` seconds of the process's clock, rather than when
    # the log next moves: under a stream of writes every stream then sends
    # a batch a second (by default) instead of one per move of the log
    # (the watcher would move it ten times a second; it refreshes once
    # before each mark instead, Feed.following), and the streams at one
    # cursor read the same changes at the same moment, joined once for all
    # of them (Feed.events).
    pace = req.conf.changes.stream_interval
    if since is None:
        since = req.store.worlds.current(whole=True).complete
    try:
        # Before the stream starts: a gone cursor is a 410, not an event.
        first, cursor = feed.changes(since, limit)
    except feed_changes.CursorGone as exc:
        raise _gone(exc)

    def events():
        position = cursor
        # One write per batch of changes, not per change: 50 streams under
        # a thousand changes a second would otherwise be 50,000 writes.
        yield b'retry: 2000\n\n' + feed.events.of(since, first)
        end = time.monotonic() + STREAM_SECONDS
        with feed.following(pace):
            while time.monotonic() < end:
                try:
                    found, position_next = feed.wait(position, HEARTBEAT,
                                                     limit)
                except feed_changes.CursorGone:
                    return      # the client reconnects and gets its 410
                if not found:
                    yield b': keep-alive\n\n'
                    continue
                yield feed.events.of(position, found)
                position = position_next
                time.sleep(feed_service.seconds_to_mark(pace))

    response = req.response
    response.status = 200
    response.content_type = EVENT_STREAM
    response.cache_control = 'no-cache'
    response.headers['X-Accel-Buffering'] = 'no'
    response.app_iter = events()
    return response
