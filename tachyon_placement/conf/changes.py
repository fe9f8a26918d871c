from oslo_config import cfg

changes_group = cfg.OptGroup(
    'changes', title='Change feed',
    help="Tachyon's change feed (/tachyon/changes).")

changes_opts = [
    cfg.IntOpt(
        'retention_versions', default=1000000, min=0,
        help='How many graph versions (writes) back a cursor stays valid: '
             'deletions older than that are forgotten, and a client with '
             'an older cursor gets 410 and lists again. Live objects cost '
             'nothing here; only deletions are kept.'),
    cfg.IntOpt(
        'prune_interval', default=600, min=0,
        help='Seconds between two prunings of the deletions older than '
             'retention_versions, in every API process (0: never).'),
    cfg.IntOpt(
        'log_size', default=100000, min=1,
        help='Changes each API process keeps in memory for subscribers; '
             'older cursors are answered from its copy of the graph.'),
    cfg.FloatOpt(
        'stream_interval', default=1.0, min=0.05, max=10,
        help='Under a stream of writes, a Server-Sent Events stream sends '
             'the changes in batches this many seconds apart (every '
             'stream at the same moments, so that streams at one cursor '
             'share one encoding). Longer: fewer, larger writes for the '
             'server and its subscribers; shorter: changes arrive '
             'sooner.'),
]


def register_opts(conf):
    conf.register_group(changes_group)
    conf.register_opts(changes_opts, group=changes_group)


def list_opts():
    return {changes_group.name: changes_opts}
