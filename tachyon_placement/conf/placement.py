from oslo_config import cfg

DEFAULT_CONSUMER_MISSING_ID = '00000000-0000-0000-0000-000000000000'

placement_group = cfg.OptGroup(
    'placement', title='Placement service options')

placement_opts = [
    cfg.BoolOpt(
        'randomize_allocation_candidates', default=False,
        help="When limiting allocation candidates, return a random sample of "
             "the full result set instead of the deterministic first ones."),
    cfg.StrOpt(
        'incomplete_consumer_project_id', default=DEFAULT_CONSUMER_MISSING_ID,
        help="Project id recorded for consumers created by microversions "
             "older than 1.8, which do not send one."),
    cfg.StrOpt(
        'incomplete_consumer_user_id', default=DEFAULT_CONSUMER_MISSING_ID,
        help="User id recorded for consumers created by microversions older "
             "than 1.8, which do not send one."),
    cfg.IntOpt(
        'allocation_conflict_retry_count', default=10,
        help="How many times an allocation write is retried server-side when "
             "a resource provider generation changed underneath it."),
    cfg.IntOpt(
        'max_allocation_candidates', default=-1,
        help="Upper bound on the allocation candidates generated for one "
             "request (-1: unbounded). The request's own limit is applied "
             "after generation."),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy', default='depth-first',
        choices=('depth-first', 'breadth-first'),
        help="Order in which viable root providers are visited when "
             "generating candidates: all of one root first (depth-first) or "
             "one candidate per root in turn (breadth-first)."),
]


def register_opts(conf):
    conf.register_group(placement_group)
    conf.register_opts(placement_opts, group=placement_group)


def list_opts():
    return {placement_group: placement_opts}
