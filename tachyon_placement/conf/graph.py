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
             "external FalkorDB. Unset: the embedded FalkorDB engine."),
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
