from oslo_config import cfg

api_group = cfg.OptGroup('api', title='API options')

api_opts = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=('keystone', 'noauth2'),
        deprecated_group='DEFAULT',
        help="How requests are authenticated: 'keystone' (keystonemiddleware "
             "auth_token) or 'noauth2' (testing only: no credential check; "
             "the token 'admin' is an admin).",
    ),
    cfg.IntOpt(
        'max_request_body_size',
        default=8 * 1024 * 1024, min=65536,
        help="Bytes a request body may have; a longer one is answered 413 "
             "in Placement's error document before it is read whole. The "
             "default holds Nova's large writes many times over: a "
             "reshaper of 320 providers (4 inventories each) moving the "
             "allocations of 1,000 consumers is 0.56 MB.",
    ),
    cfg.FloatOpt(
        'request_header_timeout',
        default=20.0, min=1.0,
        help="Seconds the built-in server (tachyon-placement-api) gives a "
             "new connection to send its request line and headers; past "
             "it the connection is cut, so that clients that send a "
             "request slowly (a slowloris) cannot hold the server's "
             "threads. Under Apache, gunicorn or uwsgi their own settings "
             "bound it (the production layout in the docs).",
    ),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
