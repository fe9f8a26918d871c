"""tachyon-feed: serve the change feed (/tachyon/changes) on its own.

An asyncio server (aiohttp) that holds thousands of subscribers on one
thread, beside the API's workers: a deployment routes /tachyon/changes
(and /tachyon/changes/stream) to it, everything else to the API (see the
docs' production layout; devstack's Apache does it).  It reads the same
configuration file as the API.

Once a crowd of subscribers has left (``[changes]
restart_after_subscribers``) it starts itself anew in the same process
(exec) on the same listening socket, handed over by its descriptor
number in LISTEN_FD_ENV: what they took is given back whole, no
connection is refused meanwhile.
"""
import asyncio
import os
import resource
import signal
import socket
import sys

from aiohttp import web
from oslo_config import cfg
from oslo_log import log as logging

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.feed import server as feed_server
from tachyon_placement.monitoring import metrics
from tachyon_placement import processes
from tachyon_placement.wsgi import malloc_arenas

LOG = logging.getLogger(__name__)

# The listening socket's descriptor, handed to the process started anew.
LISTEN_FD_ENV = 'TACHYON_FEED_LISTEN_FD'
# Before starting anew: seconds the connections this process accepted last
# have to send their requests once it stopped accepting (aiohttp closes a
# connection with no request yet when it shuts down: seen as "Remote end
# closed connection without response" by a client of the restart). Those
# arriving after wait in the listening socket's backlog for the new start.
RESTART_DRAIN = 0.5

cli_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address to listen on.'),
    cfg.PortOpt('port', default=8779, help='Port to listen on.'),
]


def raise_open_files():
    """Every subscriber takes a file descriptor: take the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def share_cpu(policy, niceness):
    """Applies ``[changes] cpu_policy`` to this process (all its threads,
    made after); returns the policy in force."""
    if policy == 'idle' and hasattr(os, 'SCHED_IDLE'):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return 'idle'
        except OSError as exc:
            LOG.warning('SCHED_IDLE refused (%s): niceness %d instead',
                        exc, niceness)
    # Raised to the niceness, not by it: a start anew (start_anew) keeps
    # the process's niceness and must not add to it.
    if niceness > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    return 'nice %d' % niceness


def listening_socket(host, port, environ=os.environ):
    """The socket to serve on: the one handed over by the process this one
    replaced (LISTEN_FD_ENV, taken out of ``environ``), else a new one
    bound to ``host``:``port``."""
    handed = environ.pop(LISTEN_FD_ENV, None)
    if handed is not None:
        try:
            sock = socket.socket(fileno=int(handed))
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                sock.set_inheritable(False)
                return sock
            sock.detach()
        except (OSError, ValueError):
            pass
        LOG.warning('%s=%s names no listening socket: binding anew',
                    LISTEN_FD_ENV, handed)
    family, kind, proto, _name, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(4096)
    return sock


def start_anew(sock):
    """Replace this process's program with a new start of itself (exec:
    the same process id, so a supervisor sees nothing), handing it the
    listening socket.  Returns only if the exec failed."""
    handed = os.dup(sock.fileno())
    os.set_inheritable(handed, True)
    environ = dict(os.environ, **{LISTEN_FD_ENV: str(handed)})
    argv = [sys.executable] + list(sys.orig_argv[1:])
    try:
        os.execve(sys.executable, argv, environ)
    except OSError as exc:
        LOG.error('Change feed: could not start anew (%s): exiting', exc)
        os.close(handed)


def main(argv=None):
    conf = tachyon_conf.service_conf(
        sys.argv[1:] if argv is None else argv, cli_opts)
    # As in the API's processes: the reads' threads share two arenas.
    malloc_arenas.cap()
    open_files = raise_open_files()
    policy = share_cpu(conf.changes.cpu_policy, conf.changes.nice)
    sock = listening_socket(conf.host, conf.port)
    application = deploy.load_feed_app(conf)
    if conf.metrics.enabled and conf.metrics.feed_listen_port:
        # After the application: it enabled the metrics.
        metrics.serve(conf.metrics.listen_host,
                      conf.metrics.feed_listen_port)
    stop = asyncio.Event()
    anew = []

    def crowd_left():
        LOG.info('Change feed: the last of a crowd of subscribers left; '
                 'starting anew to give their memory back (%s MiB now)',
                 processes.resident_mib())
        anew.append(True)
        stop.set()
    crowd = conf.changes.restart_after_subscribers
    server = feed_server.FeedServer(
        conf, application, crowd_left=crowd_left if crowd else None,
        crowd=crowd or feed_server.GIVE_BACK_AFTER)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(server.setup())
    # The site is handed a copy of the socket: stopping it closes its
    # copy, the listening socket stays open for the process started anew.
    site = web.SockSite(server.runner, socket.socket(fileno=os.dup(
        sock.fileno())))
    loop.run_until_complete(site.start())
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    LOG.info('Tachyon change feed listening on http://%s:%s/tachyon/changes '
             '(%d open files allowed, CPU policy %s)', conf.host, conf.port,
             open_files, policy)
    print('Tachyon change feed listening on http://%s:%s/tachyon/changes'
          % (conf.host, conf.port), flush=True)
    try:
        loop.run_until_complete(stop.wait())
        if anew:
            loop.run_until_complete(site.stop())
            loop.run_until_complete(asyncio.sleep(RESTART_DRAIN))
    finally:
        loop.run_until_complete(server.cleanup())
        application.store.close()
        loop.close()
    if anew:
        start_anew(sock)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
