"""tachyon-manage: administrative commands.

``tachyon-manage --config-file FILE db sync`` creates the graph's indexes
and constraints and syncs the standard resource classes (os-resource-classes)
and traits (os-traits).  The API does the same on start, idempotently.
"""
import sys

from oslo_config import cfg

from tachyon_placement import conf as tachyon_conf
from tachyon_placement.graph import store as graph_store


def db_sync(conf):
    store = graph_store.open_store(conf, sync=False)
    try:
        store.sync()
    finally:
        store.close()
    print('Graph schema, standard resource classes and traits are in sync.')
    return 0


def _add_commands(subparsers):
    db = subparsers.add_parser('db', help='Graph store schema and data.')
    db_commands = db.add_subparsers(dest='db_command')
    db_commands.required = True
    sync = db_commands.add_parser(
        'sync', help='Create indexes/constraints; sync standard classes and '
                     'traits.')
    sync.set_defaults(func=db_sync)


def main(argv=None):
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=_add_commands))
    conf(sys.argv[1:] if argv is None else argv, project='placement')
    return conf.command.func(conf)


if __name__ == '__main__':
    sys.exit(main())
