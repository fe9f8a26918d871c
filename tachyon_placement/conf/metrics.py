from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help="Tachyon's own metrics for Prometheus (requests, candidate "
         "searches, the copy of the graph, the engine, the collector, "
         "the change feed). Under gunicorn every worker counts: "
         "tachyon_placement.wsgi.gunicorn sets up prometheus-client's "
         "multiprocess mode.")

metrics_opts = [
    cfg.BoolOpt(
        'enabled', default=False,
        help="Record the metrics and answer GET /tachyon/monitoring/"
             "metrics (policy tachyon:monitoring:metrics) with them in "
             "Prometheus' text format. Off: nothing is recorded."),
    cfg.HostAddressOpt(
        'listen_host', default='127.0.0.1',
        help="With listen_port: the address the metrics are also served "
             "on, without authentication, for a Prometheus that holds no "
             "Keystone token (keep it on a management network)."),
    cfg.PortOpt(
        'listen_port', default=0,
        help="Also serve the metrics on this port, without "
             "authentication (0: only the API route). Served by the "
             "process that starts the server: tachyon-placement-api, or "
             "gunicorn's master with tachyon_placement.wsgi.gunicorn "
             "(every worker's values summed)."),
    cfg.PortOpt(
        'feed_listen_port', default=0,
        help="tachyon-feed serves its own metrics on this port (on "
             "listen_host), without authentication, for a Prometheus that "
             "holds no Keystone token (0: only its route, which needs a "
             "token). A port of its own: the API and the feed read the "
             "same file."),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group.name: metrics_opts}
