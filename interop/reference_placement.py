"""Serve upstream OpenStack Placement (the reference) on loopback.

Only for checking the interop suite itself: ``INTEROP_TARGET=placement
interop/run.sh`` runs the very same client tests against openstack-placement
16.0.0 (installed in Tachyon's test environment for the gabbi conformance
suite), so a step that fails on Tachyon but passes here is a Tachyon bug, and
a step that fails here too is a bug in the test.

    python interop/reference_placement.py --config-file placement.conf \
        --port 8778

The configuration file needs ``[placement_database] connection`` (e.g. a
fresh SQLite file) and ``[api] auth_strategy = noauth2``; the schema is
created on start-up (``sync_on_startup``).
"""
import argparse
import os
import socketserver
import sys
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    args = parser.parse_args()
    # placement.wsgi.api reads <OS_PLACEMENT_CONFIG_DIR>/placement.conf.
    config_file = os.path.abspath(args.config_file)
    if os.path.basename(config_file) != 'placement.conf':
        sys.exit('the reference configuration file must be named '
                 'placement.conf')
    os.environ['OS_PLACEMENT_CONFIG_DIR'] = os.path.dirname(config_file)
    from placement.wsgi import api
    server = simple_server.make_server(
        args.host, args.port, api.application,
        server_class=ThreadingWSGIServer, handler_class=QuietHandler)
    print('Placement (reference) listening on http://%s:%s/'
          % (args.host, args.port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
