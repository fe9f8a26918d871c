"""A small, low-overhead HTTP client for the Placement API.

Standard library only (the harness itself needs nothing installed): one
keep-alive ``http.client`` connection per thread and service, requests at
the microversion Nova sends, and noauth2's ``X-Auth-Token: admin``.

``request()`` never raises for HTTP or transport problems: a failed
request is a ``Response`` with ``status`` 0 and ``error`` set, so that a
workload can count it instead of crashing.
"""
import gc
import http.client
import json
import socket
import threading
import time
import urllib.parse

import orjson

# The microversion Nova's scheduler sends (the latest Placement 16 serves).
MICROVERSION = '1.39'
TOKEN = 'admin'


class Response:
    __slots__ = ('method', 'path', 'status', 'body', 'headers', 'elapsed',
                 'error', '_json')

    def __init__(self, method, path, status, body=b'', headers=None,
                 elapsed=0.0, error=None):
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.elapsed = elapsed      # seconds, request sent -> body read
        self.error = error          # transport error text (status 0)
        self._json = None

    @property
    def ok(self):
        return 200 <= self.status < 300

    def json(self):
        """The decoded body, or None if there is none or it is not JSON."""
        if self._json is None and self.body:
            # orjson (Tachyon's own dependency), with the collector
            # paused: the clients share the machine with the services they
            # measure, and the scheduling loop decodes half a megabyte of
            # candidates per claim (tens of thousands of new objects, whose
            # collections were half the decoding: 2.6 -> 1.3 ms).
            collecting = gc.isenabled()
            gc.disable()
            try:
                self._json = orjson.loads(self.body)
            except ValueError:
                self._json = None
            finally:
                if collecting:
                    gc.enable()
        return self._json

    def error_code(self):
        """``errors[0].code`` of a Placement error body, or None."""
        data = self.json()
        try:
            return data['errors'][0].get('code')
        except (TypeError, KeyError, IndexError, AttributeError):
            return None

    def describe(self, limit=300):
        """One line for reports: status and the start of the error."""
        if self.status == 0:
            return 'transport error: %s' % self.error
        text = ''
        data = self.json()
        try:
            err = data['errors'][0]
            text = '%s %s' % (err.get('code') or '', err.get('detail')
                              or err.get('title') or '')
        except (TypeError, KeyError, IndexError, AttributeError):
            text = self.body[:limit].decode('utf-8', 'replace')
        text = ' '.join(text.split())
        return ('%d %s' % (self.status, text[:limit])).strip()


class Client:
    """Requests to one service; safe to share between threads."""

    def __init__(self, name, host, port, microversion=MICROVERSION,
                 token=TOKEN, timeout=300.0):
        self.name = name
        self.host = host
        self.port = port
        self.timeout = timeout
        self.base_headers = {
            'Accept': 'application/json',
            'OpenStack-API-Version': 'placement %s' % microversion,
            'X-Auth-Token': token,
            'User-Agent': 'tachyon-bench',
        }
        self._local = threading.local()

    def __repr__(self):
        return 'Client(%s, %s:%d)' % (self.name, self.host, self.port)

    # Sent to other processes (the scheduling loop's clients) without its
    # connections: each thread opens its own.
    def __getstate__(self):
        state = dict(self.__dict__)
        del state['_local']
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

    def _connection(self):
        conn = getattr(self._local, 'conn', None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port,
                                              timeout=self.timeout)
            self._local.conn = conn
            self._local.used = False
        return conn

    def _drop_connection(self):
        conn = getattr(self._local, 'conn', None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def close(self):
        """Close this thread's connection."""
        self._drop_connection()

    def request(self, method, path, body=None, headers=None):
        data = None
        hdrs = dict(self.base_headers)
        if body is not None:
            data = json.dumps(body).encode()
            hdrs['Content-Type'] = 'application/json'
        if headers:
            hdrs.update(headers)
        # A keep-alive connection the server closed meanwhile fails on
        # first use: retry once on a fresh connection (the request was not
        # processed).
        for attempt in (0, 1):
            conn = self._connection()
            reused = self._local.used
            start = time.perf_counter()
            try:
                conn.request(method, path, body=data, headers=hdrs)
                resp = conn.getresponse()
                payload = resp.read()
                elapsed = time.perf_counter() - start
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError) as e:
                self._drop_connection()
                if reused and attempt == 0:
                    continue
                return Response(method, path, 0,
                                elapsed=time.perf_counter() - start,
                                error='%s: %s' % (type(e).__name__, e))
            except (OSError, http.client.HTTPException) as e:
                self._drop_connection()
                if isinstance(e, socket.timeout):
                    err = 'timeout after %.0fs' % self.timeout
                else:
                    err = '%s: %s' % (type(e).__name__, e)
                return Response(method, path, 0,
                                elapsed=time.perf_counter() - start,
                                error=err)
            self._local.used = True
            if resp.will_close:
                self._drop_connection()
            return Response(method, path, resp.status, payload,
                            {k.lower(): v for k, v in resp.getheaders()},
                            elapsed)
        raise AssertionError('unreachable')

    def get(self, path, **params):
        return self.request('GET', with_query(path, params))

    def put(self, path, body=None):
        return self.request('PUT', path, body)

    def post(self, path, body=None):
        return self.request('POST', path, body)

    def delete(self, path):
        return self.request('DELETE', path)


def with_query(path, params):
    """path?params, with the separators Placement's syntax uses unescaped
    (``VCPU:2,MEMORY_MB:512``, ``in:a,b``, ``!TRAIT``)."""
    if not params:
        return path
    items = []
    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            items.append((key, v))
    return '%s?%s' % (path, urllib.parse.urlencode(items, safe=':,!'))
