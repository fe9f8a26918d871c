from oslo_config import cfg

graph_group = cfg.OptGroup(
    'graph', title='Graph store',
    help="Where Tachyon keeps its state. With no connection URI an embedded "
         "FalkorDB server is started privately on a local socket.")

graph_opts = [
    cfg.StrOpt(
        'connection', secret=True,
        help="Graph database URI: bolt:// or neo4j:// (optionally +s/+ssc) "
             "for Neo4j 5, falkor://host:port or unix:///path/to.sock for an "
             "external FalkorDB, "
             "sentinel://[:password@]host:port,host:port/primary-name for "
             "FalkorDB servers failed over by Redis Sentinel (the password "
             "is the servers'; the sentinels' is sentinel_password). "
             "Unset: the embedded FalkorDB engine."),
    cfg.StrOpt(
        'username', help="Neo4j user name (or put it in the URI)."),
    cfg.StrOpt(
        'password', secret=True, help="Neo4j password."),
    cfg.StrOpt(
        'database',
        help="Neo4j: the database (default: the server's default database, "
             "'neo4j' unless configured otherwise; Community edition serves "
             "only that one). FalkorDB: the graph key (default "
             "'placement')."),
    cfg.StrOpt(
        'sentinel_password', secret=True,
        help="The password of the Redis sentinels of a sentinel:// "
             "connection (requirepass in their configuration), if any."),
    cfg.IntOpt(
        'replica_acks', default=0, min=0,
        help="FalkorDB with replicas: answer a write only once this many "
             "replicas hold it (Redis WAIT on the write's connection), so "
             "that a failover to one of them loses no acknowledged write. "
             "Fewer within replica_ack_timeout answers 503: the write is on "
             "the primary but a failover may lose it. 0: answer once the "
             "primary has it (a failover may lose the last writes). Set it "
             "with the servers' min-replicas-to-write, which stops a "
             "primary cut off from its replicas from taking writes at all."),
    cfg.FloatOpt(
        'replica_ack_timeout', default=2.0, min=0.001,
        help="Seconds a write waits for replica_acks replicas at most."),
    cfg.StrOpt(
        'data_dir', default='/var/lib/tachyon/graph',
        help="Directory of the embedded FalkorDB engine: data files, socket "
             "and lock. Several API worker processes using the same "
             "directory share one server."),
    cfg.StrOpt(
        'appendfsync', default='always', choices=('always', 'everysec'),
        help="Embedded engine durability: fsync the append-only file after "
             "every write (always) or once a second (everysec: a power loss "
             "may lose the last second; a process crash loses nothing)."),
]


def register_opts(conf):
    conf.register_group(graph_group)
    conf.register_opts(graph_opts, group=graph_group)


def list_opts():
    return {graph_group: graph_opts}
