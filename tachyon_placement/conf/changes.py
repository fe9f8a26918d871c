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
        help='Changes the feed server keeps in memory for subscribers; '
             'older cursors are answered from its copy of the graph.'),
    cfg.IntOpt(
        'max_subscribers', default=10000, min=1,
        help='Subscribers (streams and waiting long polls together) one '
             'feed server holds; past it a new one gets 503 '
             'tachyon.changes.busy with Retry-After. Each takes a file '
             'descriptor: the server raises its own limit to the hard '
             'one at start.'),
    cfg.IntOpt(
        'max_subscribers_per_client', default=100, min=1,
        help='Subscribers one client address holds on one feed server '
             '(behind a proxy, see trusted_proxies); past it 503.'),
    cfg.ListOpt(
        'trusted_proxies', default=[],
        help='Addresses or networks of proxies whose X-Forwarded-For '
             'names the client (its last address), for '
             'max_subscribers_per_client. Empty: the peer address.'),
    cfg.IntOpt(
        'retry_after', default=5, min=1,
        help='Seconds a refused subscriber is told to wait (Retry-After).'),
    cfg.IntOpt(
        'subscriber_buffer', default=256 * 1024, min=64 * 1024,
        help='Bytes a subscriber\'s connection may hold unsent; a '
             'subscriber past it, or whose writes do not drain within '
             'write_timeout, is a slow reader: it is sent a last event '
             '(reason slow_reader, the cursor to resume from) and '
             'disconnected.'),
    cfg.FloatOpt(
        'write_timeout', default=10.0, min=0.1,
        help='Seconds a write to a subscriber may take to drain.'),
    cfg.IntOpt(
        'max_stream_seconds', default=3600, min=1,
        help='Seconds a Server-Sent Events stream lasts; it then ends '
             'with a last event (reason stream_limit) and the client '
             'reconnects with Last-Event-ID.'),
    cfg.StrOpt(
        'cpu_policy', default='idle', choices=[
            ('idle', 'Linux\'s SCHED_IDLE: the feed server runs only on '
                     'CPU time no other process wants; a process of the '
                     'API that wakes takes the CPU from it at once.'),
            ('nice', 'The normal policy at niceness ``nice``.')],
        help='How tachyon-feed shares the machine\'s CPUs with the API. On '
             'a machine of its own either policy gets all of it; on a '
             'saturated machine it shares with the API, ``idle`` lets '
             'subscribers wait rather than Placement\'s requests (where '
             'SCHED_IDLE is not available, ``nice`` applies).'),
    cfg.IntOpt(
        'nice', default=10, min=0, max=19,
        help='Niceness tachyon-feed raises itself to at start when cpu_policy '
             'is nice (0: the same priority as the API).'),
    cfg.BoolOpt(
        'read_replica', default=True,
        help='With FalkorDB, the feed server follows the graph on a '
             'private replica of the graph server (a redis-server with the '
             'FalkorDB module, started and fed by Redis replication), so '
             'that its reads never make Placement\'s writes wait: FalkorDB '
             'runs a write only when no read holds the graph. It costs a '
             'second copy of the graph in memory and the CPU of applying '
             'the writes; the feed may trail the writes by the '
             'replication delay (a cursor a client read elsewhere waits '
             'for the replica). False, or where the server refuses '
             'replication: the feed reads the server. Neo4j\'s reads do '
             'not block its writes; this option does not apply to it.'),
    cfg.IntOpt(
        'preflight_workers', default=4, min=1,
        help='Threads of the feed server that run a new request\'s '
             'checks (authentication, policy, the first changes) through '
             'the API\'s own handlers, and reads of cursors older than '
             'its log.'),
    cfg.IntOpt(
        'restart_after_subscribers', default=100, min=0,
        help='tachyon-feed starts itself anew once the last of at least '
             'this many subscribers (held at once) has left and none came '
             'for two seconds: the same process id and listening socket, '
             'so a connection made meanwhile waits in the socket\'s '
             'backlog for the second or two it takes, never refused. '
             'What a crowd of subscribers took (their connections, '
             'buffers, the log of recent changes filled for them) is '
             'then given back to the system whole: a process can give '
             'back only part of it (CPython keeps each memory arena that '
             'holds one live object), and a 1,000-subscriber run left it '
             'at 2.5 times its size. 0: never; memory is given back in '
             'place (what the allocators can). The API\'s built-in feed '
             'always gives back in place.'),
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
