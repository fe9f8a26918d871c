"""tachyon-feed: serve the change feed (/tachyon/changes) on its own.

An asyncio server (aiohttp) that holds thousands of subscribers on one
thread, beside the API's workers: a deployment routes /tachyon/changes
(and /tachyon/changes/stream) to it, everything else to the API (see the
docs' production layout; devstack's Apache does it).  It reads the same
configuration file as the API.
"""
import asyncio
import os
import resource
import signal
import sys

from aiohttp import web
from oslo_config import cfg
from oslo_log import log as logging

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.feed import server as feed_server
from tachyon_placement.wsgi import malloc_arenas

LOG = logging.getLogger(__name__)

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
    if niceness:
        os.nice(niceness)
    return 'nice %d' % niceness


def main(argv=None):
    conf = tachyon_conf.service_conf(
        sys.argv[1:] if argv is None else argv, cli_opts)
    # As in the API's processes: the reads' threads share two arenas.
    malloc_arenas.cap()
    open_files = raise_open_files()
    policy = share_cpu(conf.changes.cpu_policy, conf.changes.nice)
    application = deploy.load_feed_app(conf)
    server = feed_server.FeedServer(conf, application)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(server.setup())
    site = web.TCPSite(server.runner, conf.host, conf.port, backlog=4096,
                       reuse_address=True)
    loop.run_until_complete(site.start())
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    LOG.info('Tachyon change feed listening on http://%s:%s/tachyon/changes '
             '(%d open files allowed, CPU policy %s)', conf.host, conf.port,
             open_files, policy)
    print('Tachyon change feed listening on http://%s:%s/tachyon/changes'
          % (conf.host, conf.port), flush=True)
    try:
        loop.run_until_complete(stop.wait())
    finally:
        loop.run_until_complete(server.cleanup())
        application.store.close()
        loop.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
