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
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
