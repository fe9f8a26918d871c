"""Configuration options.

Keys follow placement.conf wherever they still make sense, so an operator can
reuse their Placement file and add a ``[graph]`` section.  There is no global
config object: callers build a ``ConfigOpts`` and pass it around.
"""
import os

from oslo_config import cfg
from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_policy import opts as policy_opts

from tachyon_placement.conf import api
from tachyon_placement.conf import capacity
from tachyon_placement.conf import changes
from tachyon_placement.conf import graph
from tachyon_placement.conf import metrics
from tachyon_placement.conf import placement
from tachyon_placement.conf import telemetry
from tachyon_placement.conf import weighing
from tachyon_placement.conf import whatif


def register_opts(conf):
    api.register_opts(conf)
    capacity.register_opts(conf)
    changes.register_opts(conf)
    graph.register_opts(conf)
    metrics.register_opts(conf)
    placement.register_opts(conf)
    telemetry.register_opts(conf)
    weighing.register_opts(conf)
    whatif.register_opts(conf)
    logging.register_options(conf)
    policy_opts.set_defaults(conf)
    conf.register_opts(cors.CORS_OPTS, 'cors')
    conf.register_opts(http_proxy_to_wsgi.OPTS, 'oslo_middleware')


def new_conf(args=None, default_config_files=None):
    """A fresh, registered and parsed ConfigOpts."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args if args is not None else [], project='placement',
         default_config_files=default_config_files)
    return conf


def service_conf(argv, cli_opts):
    """The ConfigOpts of a serving console script (the API's built-in
    server, the feed server): Tachyon's options and ``cli_opts`` parsed
    from ``argv`` and placement.conf, logging set up."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf.register_cli_opts(cli_opts)
    conf(argv, project='placement')
    setup_logging(conf, 'placement')
    return conf


def setup_logging(conf, name):
    """oslo.log's set-up, and the log file readable by its owner and
    group only (it was 0644: it names hosts, projects and errors of a
    cloud)."""
    log_file = conf.log_file
    if log_file:
        path = os.path.join(conf.log_dir, log_file) if conf.log_dir else (
            log_file)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                             0o640)
        os.close(descriptor)
        os.chmod(path, 0o640)
    logging.setup(conf, name)
