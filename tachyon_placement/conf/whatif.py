from oslo_config import cfg

whatif_group = cfg.OptGroup(
    'whatif', title='What-if sessions',
    help="Tachyon's what-if sessions (/tachyon/sessions): private overlays "
         "of the graph in which allocation writes are tried before they "
         "are made.")

whatif_opts = [
    cfg.IntOpt(
        'max_sessions', default=32, min=1, max=10000,
        help="Most sessions open at once in the whole deployment; opening "
             "one more is refused (409 tachyon.session.too_many). Expired "
             "sessions do not count."),
    cfg.IntOpt(
        'max_sessions_per_project', default=8, min=1, max=10000,
        help="Most sessions one project (the opener's token's) has open "
             "at once, so that one service user cannot take every place "
             "of max_sessions; past it 409 tachyon.session.too_many."),
    cfg.IntOpt(
        'default_ttl', default=900, min=1, max=86400,
        help="Seconds a session lives when its opener names no ttl."),
    cfg.IntOpt(
        'max_ttl', default=3600, min=1, max=86400,
        help="Most seconds a session may live."),
    cfg.IntOpt(
        'max_consumers', default=1000, min=1, max=100000,
        help="Most consumers one session's writes may change (its stored "
             "document, about 0.5 KiB each, and its overlay grow with "
             "them); a write past it is refused (409)."),
]


def register_opts(conf):
    conf.register_group(whatif_group)
    conf.register_opts(whatif_opts, group=whatif_group)


def list_opts():
    return {whatif_group.name: whatif_opts}
