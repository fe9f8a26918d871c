from oslo_config import cfg

capacity_group = cfg.OptGroup(
    'capacity', title='Capacity counts',
    help="How Tachyon's GET /tachyon/capacity counts the instances of a "
         "request that fit.")

capacity_opts = [
    cfg.IntOpt(
        'max_candidates', default=200000, min=1000,
        help="Most candidates one count may enumerate (every candidate of "
             "the request before any claim: a host of two NUMA nodes "
             "gives up to 9 for an unsuffixed request, a wide tree "
             "thousands for isolated granular groups). A request with "
             "more is refused (400, tachyon.capacity.too_many_candidates): "
             "narrow it with in_tree or member_of. About 0.5 KiB each "
             "while the count runs."),
]


def register_opts(conf):
    conf.register_group(capacity_group)
    conf.register_opts(capacity_opts, group=capacity_group)


def list_opts():
    return {capacity_group.name: capacity_opts}
