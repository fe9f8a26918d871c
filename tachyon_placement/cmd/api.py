"""tachyon-placement-api: serve the API with a threaded WSGI server.

For development, tests and small deployments; production runs the WSGI
callable ``tachyon_placement.wsgi.api:application`` under uwsgi, gunicorn
or mod_wsgi.
"""
import signal
import socketserver
import sys
from wsgiref import simple_server

from oslo_config import cfg
from oslo_log import log as logging

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy

LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address to listen on.'),
    cfg.PortOpt('port', default=8778, help='Port to listen on.'),
]


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 reset connections when a few
    # dozen clients (nova-compute periodic tasks, a concurrency test)
    # connected at once.
    request_queue_size = 128


class QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        LOG.debug(format, *args)


def main(argv=None):
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf.register_cli_opts(cli_opts)
    conf(sys.argv[1:] if argv is None else argv, project='placement')
    logging.setup(conf, 'placement')
    application = deploy.loadapp(conf)
    server = simple_server.make_server(
        conf.host, conf.port, application,
        server_class=ThreadingWSGIServer, handler_class=QuietHandler)

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
