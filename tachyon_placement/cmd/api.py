"""tachyon-placement-api: serve the API with a threaded WSGI server.

For development, tests and small deployments; production runs the WSGI
callable ``tachyon_placement.wsgi.api:application`` under uwsgi, gunicorn
or mod_wsgi, and the change feed with tachyon-feed.

A connection whose request is for the change feed (/tachyon/changes...)
is handed, unread, to a feed server (feed/server.py) this process runs on
an event loop of its own, started at the first such request: subscribers
hold a coroutine there, never one of this server's threads.
"""
import re
import signal
import socket
import socketserver
import sys
import threading
import time
from wsgiref import simple_server

from oslo_config import cfg
from oslo_log import log as logging

from tachyon_placement.api import wsgi
from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.feed import server as feed_server
from tachyon_placement.graph import migrations
from tachyon_placement.monitoring import metrics
from tachyon_placement.wsgi import malloc_arenas

LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address to listen on.'),
    cfg.PortOpt('port', default=8778, help='Port to listen on.'),
]


# How long and how much a closing connection reads of what the client
# still sends (see ThreadingWSGIServer.shutdown_request).  The time bounds
# what a refused client holds (a thread for 2 s at most, as Apache's
# lingering close); the bytes are well past what a client sends before it
# reads a refusal: 8 MiB was not (a 10 MB body refused with 413 was reset
# under its client once the drain stopped at 8 MiB).
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024


# How long one read or write of a request's body or answer may wait.  The
# request's line and headers have [api] request_header_timeout from the
# connection's acceptance: past it the connection is cut (without it 300
# half-sent requests held 300 threads as long as their clients liked).
IDLE_SECONDS = 60.0


class Deadlines:
    """Cuts connections whose deadline passes (one thread for them all):
    ``watch(sock)`` (``seconds`` from now) until ``forget(sock)``."""

    def __init__(self, seconds):
        self.seconds = seconds
        self._due = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        threading.Thread(target=self._run, name='tachyon-api-deadlines',
                         daemon=True).start()

    def watch(self, sock):
        with self._lock:
            self._due[sock] = time.monotonic() + self.seconds
            self._changed.notify()

    def forget(self, sock):
        """False when ``sock`` was cut meanwhile (what was read of its
        request ends there: it must not be answered)."""
        with self._lock:
            return self._due.pop(sock, None) is not None

    def _run(self):
        while True:
            with self._lock:
                now = time.monotonic()
                late = [sock for sock, due in self._due.items() if due <= now]
                for sock in late:
                    del self._due[sock]
                wait = min(self._due.values(), default=now + 60) - now
                if not late:
                    self._changed.wait(max(0.05, wait))
                    continue
            for sock in late:
                LOG.info('Cut a connection that did not send its request '
                         'within %g s', self.seconds)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _NoDeadlines:
    def watch(self, sock):
        pass

    def forget(self, sock):
        return True


_NO_DEADLINES = _NoDeadlines()


# The start of a request line for the change feed.
FEED_REQUEST = re.compile(rb'^[A-Z]{1,16} /tachyon/changes(/stream)?[? ]')
# How long a new connection's thread waits for the request line's start.
PEEK_SECONDS = 10.0


class FeedFront:
    """The feed server this process hands feed connections to, started
    at the first one."""

    def __init__(self, conf):
        self._conf = conf
        self._server = None
        self._lock = threading.Lock()

    def adopt(self, sock):
        with self._lock:
            if self._server is None:
                self._server = feed_server.start_in_thread(
                    self._conf, deploy.load_feed_app(self._conf))
        self._server.adopt(sock)


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 reset connections when a few
    # dozen clients (nova-compute periodic tasks, a concurrency test)
    # connected at once.
    request_queue_size = 128
    feed_front = None
    deadlines = None

    def process_request_thread(self, request, client_address):
        # Forgotten once the headers are read (QuietHandler.parse_request)
        # or the connection is handed to the feed server.
        deadlines = self.deadlines or _NO_DEADLINES
        deadlines.watch(request)
        try:
            self._process(request, client_address, deadlines)
        finally:
            deadlines.forget(request)

    def _process(self, request, client_address, deadlines):
        if self.feed_front is not None and _asks_for_feed(request):
            deadlines.forget(request)
            try:
                self.feed_front.adopt(request)
            except Exception:  # noqa: BLE001 - the client sees it closed
                LOG.exception('Handing a change feed connection over failed')
                self.shutdown_request(request)
            return
        super().process_request_thread(request, client_address)

    def shutdown_request(self, request):
        """Close the way a web server should (a "lingering close"): send
        the end of the response, then read and drop what the client is
        still sending before closing.  A handler may answer without
        reading the body (a 400 on the query string); closing with that
        body unread would reset the connection under the client while it
        still sends, and it would never see the answer."""
        try:
            request.shutdown(socket.SHUT_WR)
            request.settimeout(LINGER_SECONDS)
            deadline = time.monotonic() + LINGER_SECONDS
            drained = 0
            while time.monotonic() < deadline and drained < LINGER_BYTES:
                chunk = request.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass
        self.close_request(request)


def _asks_for_feed(sock):
    """Whether the request line arriving on ``sock`` is for the change
    feed, read without taking it from the socket (MSG_PEEK)."""
    deadline = time.monotonic() + PEEK_SECONDS
    seen = b''
    try:
        sock.settimeout(PEEK_SECONDS)
        while time.monotonic() < deadline:
            seen = sock.recv(64, socket.MSG_PEEK)
            if not seen or len(seen) >= 40 or b'\n' in seen:
                break
            time.sleep(0.005)
    except OSError:
        return False
    finally:
        try:
            sock.settimeout(None)
        except OSError:
            pass
    return FEED_REQUEST.match(seen) is not None


class QuietHandler(simple_server.WSGIRequestHandler):
    # One read or write of the body or the answer waits this long at most.
    timeout = IDLE_SECONDS

    def parse_request(self):
        parsed = super().parse_request()
        deadlines = self.server.deadlines or _NO_DEADLINES
        if not deadlines.forget(self.connection):
            # Cut at the header timeout: the headers "ended" there.
            self.close_connection = True
            return False
        return parsed

    def log_message(self, format, *args):
        LOG.debug(format, *args)

    def send_error(self, code, message=None, explain=None):
        """Refuse a request the application never saw (a request line
        over 64 KiB: 414, too many or too long headers: 431, a garbled
        request line: 400) in Placement's JSON error shape, not
        http.server's HTML page."""
        status, headers, body = wsgi.server_error(code, message)
        self.log_error('code %d, message %s', code, message)
        self.close_connection = True
        # http.server assumes HTTP/0.9 (a bare body, no status line) until
        # the request line has parsed; nobody speaks 0.9 to Placement.
        if self.request_version in ('HTTP/0.9', ''):
            self.request_version = 'HTTP/1.0'
        self.send_response(code, status.split(' ', 1)[1])
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)


def main(argv=None):
    conf = tachyon_conf.service_conf(
        sys.argv[1:] if argv is None else argv, cli_opts)
    malloc_arenas.cap()
    try:
        application = deploy.loadapp(conf)
    except migrations.Refused as exc:
        LOG.error('%s', exc)
        print('tachyon-placement-api: %s' % exc, file=sys.stderr)
        return 1
    if conf.metrics.enabled and conf.metrics.listen_port:
        metrics.serve(conf.metrics.listen_host, conf.metrics.listen_port)
    server = simple_server.make_server(
        conf.host, conf.port, application,
        server_class=ThreadingWSGIServer, handler_class=QuietHandler)
    server.feed_front = FeedFront(conf)
    server.deadlines = Deadlines(conf.api.request_header_timeout)

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    LOG.info('Tachyon Placement API listening on http://%s:%s/',
             conf.host, conf.port)
    print('Tachyon Placement API listening on http://%s:%s/'
          % (conf.host, conf.port), flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
        application.store.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
