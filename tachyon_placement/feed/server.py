"""The feed server: /tachyon/changes on an asyncio loop of its own.

Subscribers (long polls and Server-Sent Events streams) hold a coroutine
each, never a thread: the API's workers never see them (``tachyon-feed``
runs it as a process of its own behind the deployment's proxy; the
built-in API server hands these routes' connections to one it runs in a
thread).  Every subscriber reads the same in-memory ChangeLog, filled by
one watcher thread from this server's own copy of the graph.

What is bounded, and how (conf ``[changes]``):
- subscribers per process (``max_subscribers``) and per client address
  (``max_subscribers_per_client``), long polls and streams together: past
  either, 503 ``tachyon.changes.busy`` with Retry-After, in the header and
  in the JSON error document;
- what a subscriber holds: its place in the log (a cursor), and what it
  is being sent; its connection's write buffer is capped
  (``subscriber_buffer``) and a write that does not drain within
  ``write_timeout`` seconds marks a slow reader, which is sent a last
  event saying so (``event: end``, ``reason: slow_reader``, with the
  cursor to resume from) and disconnected;
- a stream's life (``max_stream_seconds``; it ends with ``reason:
  stream_limit``, the client reconnects with Last-Event-ID);
- the threads: a request's checks (authentication, policy, the query, the
  first changes) run the WSGI application's own handlers in a small pool
  (``preflight_workers``), so the errors are the API's, exactly.
"""
import asyncio
import concurrent.futures
import gc
import io
import ipaddress
import socket
import sys
import threading
import urllib.parse
import weakref

from aiohttp import web
from oslo_log import log as logging
from oslo_utils import uuidutils
import orjson

from tachyon_placement.api.handlers import changes as handlers
from tachyon_placement.feed import changes as feed_changes
from tachyon_placement.feed import service as feed_service
from tachyon_placement.monitoring import metrics
from tachyon_placement import processes
from tachyon_placement.wsgi import malloc_arenas

LOG = logging.getLogger(__name__)

# The feed's paths, and the route of this server's own metrics (the API
# application's, answering with this process's values).
METRICS_PATH = '/tachyon/monitoring/metrics'
# The longest request target answered, as the API's own servers (64 KiB):
# one longer gets 414 in Placement's shape.  aiohttp parses lines up to
# PARSED_LINE (its own refusal of a longer one is plain text).
MAX_TARGET = 64 * 1024
PARSED_LINE = 16 * MAX_TARGET
PATHS = ('/tachyon/changes', '/tachyon/changes/stream', METRICS_PATH)
BUSY = 'tachyon.changes.busy'
# A stream's comment line when nothing changed for this long.
HEARTBEAT = 15
# Long polls woken by a change linger this long for more: under a stream
# of writes a poller answers a few times a second, not once per write.
LINGER = 0.2
# What one write of a stream carries at most (a burst is sent in pieces,
# each waiting for the previous one to drain; at most a quarter of the
# subscriber's buffer).
PIECE = 64 * 1024
# How long a slow reader's connection is kept after its last event was
# queued behind what it had not read (its buffer is capped, so this holds
# little memory): a reader that reads again meanwhile gets every event
# queued, the last one, and a clean end of the stream; past it the
# connection is cut.
GRACE = 60.0
# How often a subscriber whose buffer is full looks whether it drained.
DRAIN_POLL = 0.02
# Seconds streams have to end when the server stops.
SHUTDOWN_SECONDS = 2.0
# Once the last of this many subscribers (or more) has left, the memory
# their connections, buffers and reads took is given back to the system
# (give_back_memory): without it a 1,000-subscriber run left the server
# 20-38 MiB larger each time, and the log of recent changes it filled for
# them (up to log_size changes, ~1 KiB each) held on.
GIVE_BACK_AFTER = 100
GIVE_BACK_DELAY = 2.0
# Response headers of the application's answer a deferred one keeps.
KEPT_HEADERS = ('openstack-api-version', 'vary', 'x-openstack-request-id',
                'content-type', 'cache-control', 'x-accel-buffering')


class SlowReader(Exception):
    """The subscriber does not read what it is sent fast enough."""


class Limits:
    """Subscribers held, per process and per client address."""

    def __init__(self, most, most_per_client):
        self.most = most
        self.most_per_client = most_per_client
        self.held = 0
        self.by_client = {}

    def take(self, client):
        """Whether ``client`` may hold one more (then it does)."""
        if self.held >= self.most or self.by_client.get(
                client, 0) >= self.most_per_client:
            return False
        self.held += 1
        self.by_client[client] = self.by_client.get(client, 0) + 1
        return True

    def give(self, client):
        self.held -= 1
        left = self.by_client[client] - 1
        if left:
            self.by_client[client] = left
        else:
            del self.by_client[client]


class Stats:
    """What the server did, for its operators and the tests."""

    def __init__(self):
        self.busy = 0               # 503s
        self.slow_readers = 0       # disconnected for not reading
        self.streams_ended = 0      # ended at max_stream_seconds
        self.gone = 0               # 410s and streams ended by a gone cursor

    def count(self, what):
        """One more ``what`` (busy, slow_readers, streams_ended, gone),
        here and in the metrics."""
        setattr(self, what, getattr(self, what) + 1)
        metrics.feed_event(what)

    def as_dict(self):
        return dict(vars(self))


def give_back_memory(feed):
    """Forget what ``feed`` kept for its subscribers (Feed.forget: the log
    of recent changes, the answers joined for them, its copy of the graph;
    the next ones read what they missed anew, as after a restart) and the
    changes' encodings, collect the cycles they left (their requests and
    responses), then hand the free memory back to the system (what the
    allocators can: CPython keeps an arena that holds any live block).
    The copy of the graph goes too because it was made while they were
    there: its records, spread over the memory their connections took,
    would hold much of it."""
    before = processes.resident_mib()
    feed.forget()
    feed_changes.ENCODINGS.forget()
    gc.collect()
    malloc_arenas.trim()
    LOG.info('Change feed: the last subscriber left; memory given back '
             '(%s MiB -> %s MiB)', before, processes.resident_mib())


def call_wsgi(application, environ):
    """(status, headers, body) of a WSGI call."""
    answer = {}
    chunks = []

    def start_response(status, headers, exc_info=None):
        answer['status'], answer['headers'] = status, headers
        return chunks.append
    result = application(environ, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, 'close', None)
        if close is not None:
            close()
    return answer['status'], answer['headers'], b''.join(chunks)


def _latin1(text):
    """A header value as WSGI has it: its bytes as latin-1 (aiohttp
    decodes them as UTF-8, undecodable bytes as surrogates)."""
    return text.encode('utf-8', 'surrogateescape').decode('latin-1')


def wsgi_environ(request, peer):
    """The WSGI environ of an aiohttp request (GET: no body is read):
    PATH_INFO the path's bytes unquoted, QUERY_STRING as it came (aiohttp's
    own are decoded), each as latin-1, as a WSGI server gives them."""
    host, _sep, port = (request.host or '').rpartition(':')
    if not host:
        host, port = request.host or 'localhost', '80'
    path, _sep, query = request.raw_path.partition('?')
    environ = {
        'REQUEST_METHOD': request.method,
        'SCRIPT_NAME': '',
        'PATH_INFO': urllib.parse.unquote_to_bytes(path).decode('latin-1'),
        'QUERY_STRING': query.partition('#')[0],
        'SERVER_NAME': host,
        'SERVER_PORT': port,
        'SERVER_PROTOCOL': 'HTTP/%d.%d' % tuple(request.version),
        'REMOTE_ADDR': peer or '',
        'CONTENT_LENGTH': '0',
        'wsgi.version': (1, 0),
        'wsgi.url_scheme': request.scheme,
        'wsgi.input': io.BytesIO(b''),
        'wsgi.errors': sys.stderr,
        'wsgi.multithread': True,
        'wsgi.multiprocess': True,
        'wsgi.run_once': False,
        handlers.DEFER: {},
    }
    for name, value in request.headers.items():
        key = name.upper().replace('-', '_')
        if key in ('CONTENT_LENGTH',):
            continue
        if key != 'CONTENT_TYPE':
            key = 'HTTP_' + key
        value = _latin1(value)
        if key in environ:
            environ[key] += ',' + value
        else:
            environ[key] = value
    return environ


def error_document(status, title, detail, code, **more):
    """(request id, body) of Placement's JSON error document."""
    identifier = 'req-' + uuidutils.generate_uuid()
    error = {'status': status, 'title': title, 'detail': detail,
             'code': code, 'request_id': identifier}
    error.update(more)
    return identifier, orjson.dumps({'errors': [error]})


class FeedServer:
    """The change feed on an asyncio loop; ``application`` the WSGI
    application (deploy.loadapp) whose store is this server's own."""

    def __init__(self, conf, application, adopted=False, crowd_left=None,
                 crowd=GIVE_BACK_AFTER):
        """``crowd_left``: called (on the loop) GIVE_BACK_DELAY seconds
        after the last of at least ``crowd`` subscribers left, none since;
        by default memory is given back in place (give_back_memory)."""
        self.conf = conf
        options = conf.changes
        self.application = application
        self.feed = application.store.feed
        self.feed.keeps_log = True
        self.feed.log.capacity = options.log_size
        self.limits = Limits(options.max_subscribers,
                             options.max_subscribers_per_client)
        self.buffer_cap = options.subscriber_buffer
        self.write_timeout = options.write_timeout
        self.stream_seconds = options.max_stream_seconds
        self.retry_after = options.retry_after
        self.pace = options.stream_interval
        self.trusted = [ipaddress.ip_network(item, strict=False)
                        for item in options.trusted_proxies]
        # Handed over by the built-in API server: one request per
        # connection (the next may be one of the API's).
        self.adopted = adopted
        self.pool = concurrent.futures.ThreadPoolExecutor(
            options.preflight_workers,
            thread_name_prefix='tachyon-feed-preflight')
        self.stats = Stats()
        self.loop = None
        self.runner = None
        self._moved = None
        # The most subscribers held since memory was last given back.
        self._crowd = 0
        self._crowd_size = crowd
        self._crowd_left = crowd_left or self._give_back_in_place

    # -- the loop -----------------------------------------------------------

    def web_application(self):
        app = web.Application(handler_args={'max_field_size': 16384,
                                            'max_line_size': PARSED_LINE})
        app.router.add_route('*', '/{tail:.*}', self.handle)
        return app

    async def setup(self):
        """Bind to the running loop (before serving)."""
        self.loop = asyncio.get_running_loop()
        self._moved = asyncio.Event()
        self.feed.log.watchers.append(self._log_moved)
        self._closing = asyncio.Event()
        # handler_cancellation: a subscriber that goes away gives its place
        # back at once (aiohttp would otherwise notice only at the next
        # write, a heartbeat up to HEARTBEAT seconds later).
        self.runner = web.AppRunner(
            self.web_application(), access_log=None, handle_signals=False,
            handler_cancellation=True, shutdown_timeout=SHUTDOWN_SECONDS)
        await self.runner.setup()

    async def cleanup(self):
        """Streams end with a last event (reason shutdown), then the
        server stops."""
        self._closing.set()
        self._wake()
        await asyncio.sleep(0.2)
        self.feed.log.watchers.remove(self._log_moved)
        await self.runner.cleanup()
        self.pool.shutdown(wait=False)

    def _log_moved(self, head):
        # Called by the thread that moved the log.
        metrics.feed_head(head)
        try:
            self.loop.call_soon_threadsafe(self._wake)
        except RuntimeError:    # the loop is closed: shutting down
            pass

    def _wake(self):
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()

    async def moved_past(self, cursor, timeout):
        """Whether the log's head passed ``cursor`` within ``timeout``."""
        deadline = self.loop.time() + timeout
        while self.feed.log.head <= cursor and not self._closing.is_set():
            remaining = deadline - self.loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._moved.wait(), remaining)
            except asyncio.TimeoutError:
                return self.feed.log.head > cursor
        return True

    # -- adoption by the built-in API server --------------------------------

    def adopt(self, sock):
        """Serve an accepted connection (from another thread)."""
        sock.setblocking(False)
        asyncio.run_coroutine_threadsafe(self._adopt(sock), self.loop)

    async def _adopt(self, sock):
        try:
            await self.loop.connect_accepted_socket(self.runner.server, sock)
        except OSError:
            sock.close()

    # -- requests -------------------------------------------------------------

    def client_of(self, request):
        """The client's address: the peer's, or behind a trusted proxy the
        last address of X-Forwarded-For."""
        peer = request.remote or ''
        forwarded = request.headers.get('X-Forwarded-For')
        if forwarded and self.trusted:
            try:
                address = ipaddress.ip_address(peer)
            except ValueError:
                address = None
            if address is not None and any(address in network
                                           for network in self.trusted):
                return forwarded.rsplit(',', 1)[-1].strip() or peer
        return peer

    def _busy(self, whose):
        detail = ('Too many subscribers to the change feed %s: try again '
                  'in %d seconds.' % (whose, self.retry_after))
        identifier, body = error_document(
            503, 'Service Unavailable', detail, BUSY,
            retry_after=self.retry_after)
        self.stats.count('busy')
        return web.Response(status=503, body=body, headers={
            'Content-Type': 'application/json',
            'Retry-After': str(self.retry_after),
            'x-openstack-request-id': identifier})

    def _finish(self, response):
        if self.adopted:
            response.force_close()
        return response

    async def handle(self, request):
        if len(request.raw_path) > MAX_TARGET:
            _identifier, body = error_document(
                414, 'Request-URI Too Long', 'The request target is longer '
                'than %d bytes.' % MAX_TARGET, 'tachyon.request_uri_too_long')
            return self._finish(web.Response(
                status=414, body=body, content_type='application/json'))
        if request.raw_path.partition('?')[0] not in PATHS:
            _identifier, body = error_document(
                404, 'Not Found', 'The feed server serves %s only.'
                % ' and '.join(PATHS), 'tachyon.not_found')
            return self._finish(web.Response(
                status=404, body=body, content_type='application/json'))
        client = self.client_of(request)
        if request.raw_path.partition('?')[0] == METRICS_PATH:
            return await self._serve(request, client)   # no subscriber
        if not self.limits.take(client):
            whose = ('from this address' if self.limits.held
                     < self.limits.most else 'of this server')
            return self._finish(self._busy(whose))
        metrics.feed_subscribers(self.limits.held)
        try:
            return await self._serve(request, client)
        except Exception:   # noqa: BLE001 - a 500 in Placement's shape
            LOG.exception('The change feed failed a request')
            _identifier, body = error_document(
                500, 'Internal Server Error', 'The change feed failed.',
                'tachyon.server_error')
            return self._finish(web.Response(
                status=500, body=body, content_type='application/json'))
        finally:
            self.limits.give(client)
            metrics.feed_subscribers(self.limits.held)
            self._crowd = max(self._crowd, self.limits.held + 1)
            if not self.limits.held and self._crowd >= self._crowd_size:
                # Once their connections are closed too (they close after
                # their handlers return).
                self.loop.call_later(GIVE_BACK_DELAY, self._give_back)

    def _give_back(self):
        if not self.limits.held and self._crowd >= self._crowd_size:
            self._crowd = 0
            self._crowd_left()

    def _give_back_in_place(self):
        self.loop.run_in_executor(self.pool, give_back_memory, self.feed)

    async def _serve(self, request, client):
        environ = wsgi_environ(request, client)
        status, headers, body = await self.loop.run_in_executor(
            self.pool, call_wsgi, self.application, environ)
        deferred = environ[handlers.DEFER].get('deferred')
        code = int(status.split(' ', 1)[0])
        if code == 410:
            self.stats.count('gone')
        if deferred is None:
            response = web.Response(status=code, body=body)
            for name, value in headers:
                if name.lower() not in ('content-length', 'connection'):
                    response.headers.add(name, value)
            return self._finish(response)
        kept = {name: value for name, value in headers
                if name.lower() in KEPT_HEADERS}
        if deferred.stream:
            return await self._stream(request, deferred, kept)
        return await self._poll(deferred, kept)

    async def read(self, cursor, limit, wanted):
        """feed.changes() after the first read: from the log in memory on
        the loop, or from the engine in the pool when the log does not
        hold the cursor."""
        found = self.feed.log.after(cursor, limit, wanted)
        if found is not None:
            return found
        return await self.loop.run_in_executor(
            self.pool, self.feed.changes, cursor, limit, wanted, False)

    async def _poll(self, deferred, headers):
        since, found = deferred.since, deferred.first
        deadline = self.loop.time() + deferred.wait
        with self.feed.polling():
            while not found[0]:
                remaining = deadline - self.loop.time()
                if remaining <= 0 or not await self.moved_past(
                        found[1], remaining):
                    break
                await asyncio.sleep(min(LINGER, max(
                    0.0, deadline - self.loop.time())))
                try:
                    found = await self.read(since, deferred.limit,
                                            deferred.wanted)
                except feed_changes.CursorGone as exc:
                    return self._finish(self._gone_response(exc))
        return self._finish(web.Response(
            status=200, headers=headers, body=handlers.list_body(
                self.feed, since, found, deferred.wanted)))

    def _gone_response(self, exc):
        error = handlers._gone(exc)
        _identifier, body = error_document(410, 'Gone', error.detail,
                                           error.code)
        self.stats.count('gone')
        return web.Response(status=410, body=body,
                            content_type='application/json')

    async def _stream(self, request, deferred, headers):
        response = web.StreamResponse(status=200, headers=headers)
        if self.adopted:
            response.force_close()
        sock = request.transport.get_extra_info('socket')
        if sock is not None:
            # What the kernel holds for the subscriber is bounded too (left
            # to itself it grows a send buffer to megabytes), and a slow
            # reader's last event is not queued behind megabytes.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                            self.buffer_cap)
        await response.prepare(request)
        changes, position = deferred.first
        wanted, limit = deferred.wanted, deferred.limit
        events = self.feed.events
        reason = 'stream_limit'
        try:
            await self._send(request, response, b'retry: 2000\n\n'
                             + events.of(deferred.since, changes, wanted))
            end = self.loop.time() + self.stream_seconds
            with self.feed.following(self.pace):
                while self.loop.time() < end:
                    if self._closing.is_set():
                        reason = 'shutdown'
                        break
                    if not await self.moved_past(position, min(
                            HEARTBEAT, end - self.loop.time())):
                        await self._send(request, response,
                                         b': keep-alive\n\n')
                        continue
                    try:
                        changes, after = await self.read(position, limit,
                                                         wanted)
                    except feed_changes.CursorGone:
                        reason = 'gone'
                        self.stats.count('gone')
                        break
                    if changes:
                        await self._send(request, response,
                                         events.of(position, changes,
                                                   wanted))
                    position = after
                    # The next read at the next mark of the pace, with
                    # every other stream (one encoding for all of them).
                    await asyncio.sleep(feed_service.seconds_to_mark(
                        self.pace))
            if reason == 'stream_limit':
                self.stats.count('streams_ended')
            await self._last(request, response, reason, position)
        except SlowReader:
            self.stats.count('slow_readers')
            LOG.info('Change feed: disconnected a slow reader (%s) at %d',
                     request.remote, position)
            await self._last(request, response, 'slow_reader', position,
                             cut=True)
        except (ConnectionError, RuntimeError):
            metrics.feed_event('client_gone')     # the client went away
        return response

    async def _send(self, request, response, data):
        """Write ``data`` in pieces; SlowReader when the connection's
        buffer does not make room for the next under the cap, or a piece
        does not drain, in time."""
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError('the subscriber went away')
        view = memoryview(data)
        size = min(PIECE, self.buffer_cap // 4)
        start = 0
        while start < len(view):
            # Cut between events (a blank line: JSON has no raw newline),
            # so that the last event of a slow reader starts on its own.
            end = data.find(b'\n\n', start + size)
            end = len(view) if end < 0 else end + 2
            piece = view[start:end]
            start = end
            await self._room_for(transport, len(piece))
            try:
                await asyncio.wait_for(response.write(piece),
                                       self.write_timeout)
            except asyncio.TimeoutError:
                raise SlowReader()

    async def _room_for(self, transport, size):
        """Wait until the connection's buffer has room for ``size`` more
        bytes under the cap (any size when it is empty); SlowReader when
        it does not within write_timeout."""
        deadline = self.loop.time() + self.write_timeout
        while True:
            held = transport.get_write_buffer_size()
            if not held or held + size <= self.buffer_cap:
                return
            if transport.is_closing():
                raise ConnectionResetError('the subscriber went away')
            if self.loop.time() >= deadline:
                raise SlowReader()
            await asyncio.sleep(DRAIN_POLL)

    async def _last(self, request, response, reason, position, cut=False):
        """The last event (why the stream ends, where to resume), then the
        end of the stream.  ``cut`` (a slow reader): both are queued
        behind what the reader has not read yet (whole events: a stream is
        written an event at a time) without waiting for it to drain, the
        connection closes once they are sent, and is cut after GRACE
        seconds if they are not."""
        event = b'id: %d\nevent: end\ndata: %s\n\n' % (
            position, orjson.dumps({'reason': reason, 'cursor': position}))
        transport = request.transport
        if cut and transport is not None:
            # A weak reference: a connection that closes meanwhile (its
            # reader read the rest, or went away) is not held for GRACE,
            # with its buffer and its request's objects.
            self.loop.call_later(GRACE, _abort_if_open,
                                 weakref.ref(transport))
        # A write queues its bytes before it waits for them to drain: a
        # wait cut short leaves them queued.
        wait = 0.05 if cut else self.write_timeout
        try:
            for write in (lambda: response.write(event), response.write_eof):
                try:
                    await asyncio.wait_for(write(), wait)
                except asyncio.TimeoutError:
                    if not cut:
                        raise
            if cut and transport is not None:
                transport.close()       # once what is queued is sent
        except (asyncio.TimeoutError, ConnectionError, RuntimeError):
            _abort(transport)


def _abort_if_open(reference):
    _abort(reference())


def _abort(transport):
    """Cut a connection now, unless it is gone already: a transport that
    was closing and sent all it held has lost its connection (asyncio's
    abort of it then fails: the feed's log showed 'NoneType' object has no
    attribute 'call_soon')."""
    if transport is None:
        return
    if transport.is_closing() and not transport.get_write_buffer_size():
        return
    transport.abort()


def start_in_thread(conf, application, adopted=True):
    """A FeedServer on an event loop in a daemon thread, set up."""
    server = FeedServer(conf, application, adopted=adopted)
    ready = threading.Event()

    def run():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.setup())
        ready.set()
        loop.run_forever()
    thread = threading.Thread(target=run, name='tachyon-feed-server',
                              daemon=True)
    thread.start()
    ready.wait(30)
    return server
