"""gunicorn for Tachyon (``pip install tachyon-placement[server]``):

    gunicorn -c python:tachyon_placement.wsgi.gunicorn \
        tachyon_placement.wsgi.api:application

The configuration module sets the worker class below and Placement-like
defaults (bind 127.0.0.1:8778, 2 workers x 4 threads); command line
options override them.  ``ThreadWorker`` is gunicorn's threaded worker
whose own errors (a request line over ``limit_request_line``: 414, too
many or too long headers: 431 or 400, a garbled request: 400) come in
Placement's JSON error shape with a request id, like the application's,
instead of gunicorn's HTML page: clients parse them as any other error.
"""
from gunicorn.workers import gthread

from tachyon_placement.api import wsgi

# gunicorn configuration (this module is also its -c file).
bind = ['127.0.0.1:8778']
workers = 2
threads = 4
worker_class = 'tachyon_placement.wsgi.gunicorn.ThreadWorker'


class _Captured:
    """The client socket as gunicorn's error writer sees it: what it would
    send is kept, to be sent again as JSON; everything else is the
    socket's."""

    def __init__(self, sock):
        self._sock = sock
        self.sent = b''

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def gettimeout(self):
        return 0.0          # "already non-blocking": sent with sendall

    def setblocking(self, flag):
        pass

    def sendall(self, data):
        self.sent += data

    def send(self, data):
        self.sent += data
        return len(data)


class ThreadWorker(gthread.ThreadWorker):

    def handle_error(self, req, client, addr, exc):
        # gunicorn decides the status (and logs); its HTML answer is
        # captured and replaced by Placement's JSON one.
        captured = _Captured(client)
        super().handle_error(req, captured, addr, exc)
        if not captured.sent:
            return
        status_line = captured.sent.split(b'\r\n', 1)[0].decode('latin-1')
        try:
            code = int(status_line.split()[1])
        except (IndexError, ValueError):
            client.sendall(captured.sent)
            return
        detail = str(exc) if code < 500 else ''
        status, headers, body = wsgi.server_error(code, detail)
        head = 'HTTP/1.1 %s\r\n%s\r\n\r\n' % (status, '\r\n'.join(
            '%s: %s' % header for header in headers))
        try:
            client.sendall(head.encode('latin-1') + body)
        except OSError:
            self.log.debug('Failed to send error message.')
