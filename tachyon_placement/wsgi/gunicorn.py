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
import os
import shutil
import tempfile
import time

from gunicorn.workers import gthread

from tachyon_placement.api import wsgi
from tachyon_placement.monitoring import metrics

# Seconds the master waits at its exit for the workers it killed to be
# gone (they are, within milliseconds, once the kernel delivers SIGKILL).
KILLED_WORKERS_WAIT = 5.0

# gunicorn configuration (this module is also its -c file).
bind = ['127.0.0.1:8778']
workers = 2
threads = 4
worker_class = 'tachyon_placement.wsgi.gunicorn.ThreadWorker'

# The metrics of every worker, summed ([metrics] enabled): each worker
# writes its values under PROMETHEUS_MULTIPROC_DIR (prometheus-client's
# multiprocess mode, chosen before any metric exists: here, in the master,
# before a worker forks), a private directory made for this server unless
# the operator set one.
_made_metrics_dir = []


def on_starting(server):
    if not os.environ.get(metrics.MULTIPROC_ENV):
        path = tempfile.mkdtemp(prefix='tachyon-metrics-')
        os.environ[metrics.MULTIPROC_ENV] = path
        _made_metrics_dir.append(path)


def _tachyon_conf():
    """The service's configuration, as the workers read it."""
    from tachyon_placement import conf as tachyon_conf
    from tachyon_placement.wsgi import api as wsgi_api
    return tachyon_conf.new_conf(default_config_files=wsgi_api.config_files())


def when_ready(server):
    """[metrics] listen_port: the master answers scrapes with every
    worker's values (a worker's port would show its own only)."""
    conf = _tachyon_conf()
    if conf.metrics.enabled and conf.metrics.listen_port:
        metrics.serve(conf.metrics.listen_host, conf.metrics.listen_port)
        server.log.info('Metrics served on http://%s:%d/',
                        conf.metrics.listen_host, conf.metrics.listen_port)


def child_exit(server, worker):
    # A gone worker's gauges leave the sums ("live" modes).
    if metrics.multiprocess():
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    for path in _made_metrics_dir:
        shutil.rmtree(path, ignore_errors=True)
    # The embedded engine the workers started goes with the server: each
    # worker lets it go as it exits, the last one stops it; a worker that
    # was killed (past graceful_timeout) could not, so the master looks
    # once every worker is gone.
    _reap_killed_workers(server)
    try:
        conf = _tachyon_conf()
        if not conf.graph.connection:
            from tachyon_placement import processes
            if processes.get_shared_server(
                    conf.graph.data_dir).stop_if_unused():
                server.log.info('Stopped the embedded FalkorDB server a '
                                'killed worker left running')
    except Exception as exc:  # noqa: BLE001 - exiting anyway
        server.log.warning('The embedded FalkorDB server could not be '
                           'checked at exit: %s', exc)


def _reap_killed_workers(server, timeout=KILLED_WORKERS_WAIT):
    """Wait for the workers gunicorn killed at its stop (SIGKILL past
    graceful_timeout) to be gone: it reaps them once, at once, and one that
    was stopped or busy in the kernel is still a live process then; the
    engine's registrations of such a worker would keep the engine running.
    """
    deadline = time.monotonic() + timeout
    for pid in list(getattr(server, 'WORKERS', {})):
        while True:
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done or time.monotonic() >= deadline:
                break
            time.sleep(0.02)


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
