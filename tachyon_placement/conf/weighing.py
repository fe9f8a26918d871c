from oslo_config import cfg

weighing_group = cfg.OptGroup(
    'weighing', title='Weighers',
    help="How weighers (Tachyon's /tachyon/weighers) order allocation "
         "candidates.")

weighing_opts = [
    cfg.IntOpt(
        'host_subset_size', default=1, min=1,
        help="When weighers order the candidates, shuffle the best this "
             "many hosts among themselves (as Nova's [filter_scheduler] "
             "host_subset_size does), so that schedulers asking at the "
             "same time do not all claim on the same host. 1: best "
             "first, always. Without weighers the order is Placement's."),
]


def register_opts(conf):
    conf.register_group(weighing_group)
    conf.register_opts(weighing_opts, group=weighing_group)


def list_opts():
    return {weighing_group.name: weighing_opts}
