"""A small client of Tachyon's change feed, for controllers.

    client = FeedClient('http://tachyon:8778', token=..., kind='consumer')

    def relist():
        ...     # list what the mirror holds, from the Placement API

    for change in client.follow(relist):
        ...     # apply it (the event schema: api-ref, "Change feed")

``follow`` reads the cursor, calls ``relist`` (so nothing that changes
while it lists is missed), then follows the Server-Sent Events stream
from that cursor for ever: it reconnects after a stream ends or the
connection drops (resuming after the last event it gave, Last-Event-ID),
backs off exponentially with jitter while Tachyon is unreachable or busy
(honouring Retry-After), and on 410 (the cursor is older than the feed
keeps, or ahead of a restored graph) reads the cursor and calls
``relist`` again.  ``changes`` is the long poll, for one answer at a time.
"""
import json
import random
import time

import requests

TACHYON_VERSION = 'tachyon 1.0'
# Longer than the server's heartbeat (15 s): a stream silent this long is
# dead (a proxy that dropped it), and is opened again.
READ_TIMEOUT = 45


class CursorGone(Exception):
    """410: list again (FeedClient.follow does it)."""


class FeedClient:
    def __init__(self, endpoint, token=None, session=None, headers=None,
                 backoff=(0.5, 30.0), sleep=time.sleep, **filters):
        """``endpoint``: Tachyon's URL (the API's, or the feed server's
        behind the same proxy); ``token``: a Keystone token (X-Auth-Token),
        or a keystoneauth1 ``session`` that adds one; ``filters``: the
        feed's (kind, root, host, member_of, resource_class), a value or
        a list."""
        self.endpoint = endpoint.rstrip('/')
        self.session = session or requests.Session()
        self.headers = {'OpenStack-API-Version': TACHYON_VERSION}
        if token:
            self.headers['X-Auth-Token'] = token
        self.headers.update(headers or {})
        self.filters = {name: ','.join(value) if isinstance(
            value, (list, tuple, set, frozenset)) else value
            for name, value in filters.items() if value is not None}
        self.backoff = backoff
        self.sleep = sleep
        self.cursor = None
        # What happened, for the caller's logs and the tests.
        self.reconnects = 0
        self.relists = 0

    def _get(self, path, params, accept, **kwargs):
        headers = dict(self.headers, Accept=accept, **kwargs.pop(
            'headers', {}))
        return self.session.get(self.endpoint + path, params=params,
                                headers=headers, **kwargs)

    def head(self):
        """The cursor now (where a mirror listed from now follows)."""
        response = self._get('/tachyon/changes', self.filters,
                             'application/json', timeout=READ_TIMEOUT)
        response.raise_for_status()
        return response.json()['cursor']

    def changes(self, since, wait=0, limit=None):
        """(changes after ``since``, the cursor to resume from), waiting up
        to ``wait`` seconds for some; CursorGone on 410."""
        params = dict(self.filters, since=since, wait=wait)
        if limit:
            params['limit'] = limit
        response = self._get('/tachyon/changes', params, 'application/json',
                             timeout=wait + READ_TIMEOUT)
        if response.status_code == 410:
            raise CursorGone(response.json())
        response.raise_for_status()
        body = response.json()
        return body['changes'], body['cursor']

    def follow(self, relist, since=None):
        """Every change from ``since`` (None: relist first), for ever."""
        failures = 0
        while True:
            try:
                if since is None:
                    since = self.head()
                    self.relists += 1
                    relist()
                for event, data in self._stream(since):
                    failures = 0
                    if event == 'change':
                        # One write's changes share a cursor: a stream cut
                        # among them resumes before it (a change given
                        # twice is applied twice, to the same end).
                        since = data['cursor'] - 1
                        yield data
                    elif event == 'end':
                        # A stream's end (its time limit, a slow reader):
                        # reconnect where it says; 'gone': list again.
                        since = None if data.get('reason') == 'gone' else (
                            data['cursor'])
                        break
            except CursorGone:
                since = None
                continue
            except (requests.RequestException, ValueError) as exc:
                # Unreachable, cut mid-stream (ChunkedEncodingError), busy
                # (503), a half-read answer: back off and reconnect.
                failures += 1
                self.sleep(self._pause(failures, exc))
            self.reconnects += 1

    def _pause(self, failures, exc):
        """Seconds before the next attempt: Retry-After when the server
        said so, else exponential with full jitter."""
        response = getattr(exc, 'response', None)
        if response is not None and response.headers.get('Retry-After'):
            try:
                return float(response.headers['Retry-After'])
            except ValueError:
                pass
        low, high = self.backoff
        return random.uniform(low, min(high, low * 2 ** failures))

    def _stream(self, since):
        """(event, data) of one Server-Sent Events stream after
        ``since``."""
        response = self._get(
            '/tachyon/changes/stream', dict(self.filters, since=since),
            'text/event-stream', stream=True,
            timeout=(10, READ_TIMEOUT))
        with response:
            if response.status_code == 410:
                raise CursorGone(response.json())
            response.raise_for_status()
            event, data = 'message', []
            for line in response.iter_lines(chunk_size=None,
                                            decode_unicode=False):
                if not line:
                    if data:
                        yield event, json.loads(b'\n'.join(data))
                    event, data = 'message', []
                elif line.startswith(b'event:'):
                    event = line[6:].strip().decode()
                elif line.startswith(b'data:'):
                    data.append(line[5:].lstrip())
                # id: (the change's cursor, also in its data), retry: and
                # comments (heartbeats) need nothing.
