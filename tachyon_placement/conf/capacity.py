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
    cfg.IntOpt(
        'max_group_candidates', default=200000, min=1000,
        help="Most candidates times request groups one count may "
             "enumerate: the work and memory of a candidate grow with its "
             "groups (20 granular groups on a root of 40 children took "
             "27-45 s of CPU and 185-260 MB before the refusal at "
             "max_candidates). A request of N groups is refused past "
             "max_group_candidates / N candidates (or max_candidates, "
             "whichever is lower): 200,000 for one group, 10,000 for 20, "
             "refused within about 1.5 s."),
    cfg.IntOpt(
        'max_concurrent', default=2, min=1,
        help="Counts one API process runs at once; one more waits up to "
             "5 s for a place, then gets 503 tachyon.capacity.busy with "
             "Retry-After (3 counts at once peaked at 1 GB and slowed GET "
             "/allocation_candidates 50-fold)."),
]


def register_opts(conf):
    conf.register_group(capacity_group)
    conf.register_opts(capacity_opts, group=capacity_group)


def list_opts():
    return {capacity_group.name: capacity_opts}
