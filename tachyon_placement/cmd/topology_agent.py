"""tachyon-topology-agent: publish this host's NUMA/PCI topology (read
from sysfs) to Tachyon, once or periodically.

    tachyon-topology-agent --config-file /etc/tachyon/topology-agent.conf
    tachyon-topology-agent --config-file ... --once
    tachyon-topology-agent --print          # the document, not published

The ``[placement]`` section holds keystoneauth1 options, as in nova.conf
(``auth_type = password``, ``auth_url``, ``username``, ...; or
``auth_type = admin_token`` with ``endpoint`` and ``token`` where Tachyon
runs with ``auth_strategy = noauth2``); ``[topology_agent]`` what to read
and how often.
"""
import json
import socket
import sys
import time

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from tachyon_placement import conf as tachyon_conf
from tachyon_placement.topology import agent

LOG = logging.getLogger(__name__)

agent_group = cfg.OptGroup(
    'topology_agent', title='Topology agent',
    help='What tachyon-topology-agent reads and how often it publishes.')

agent_opts = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help="The hypervisor hostname: Nova's compute node "
                    "provider of this host has this name."),
    cfg.StrOpt('sysfs_root', default='/',
               help='Where sysfs is mounted, as the directory that holds '
                    'sys/ (a copy of another host\'s tree for tests).'),
    cfg.IntOpt('interval', default=300, min=0,
               help='Seconds between publications; 0: publish once and '
                    'exit.'),
    cfg.ListOpt('physical_device_mappings', default=[],
                help='physnet:interface pairs, as Neutron\'s SR-IOV agent '
                     'has them: the PFs owning those interfaces (and their '
                     'VFs) are on those physical networks.'),
]

cli_opts = [
    cfg.BoolOpt('once', default=False,
                help='Publish once and exit, whatever the interval.'),
    cfg.BoolOpt('print', default=False,
                help='Print the topology document read from sysfs and '
                     'exit; publish nothing.'),
]

PLACEMENT_GROUP = 'placement'


def register_opts(conf):
    conf.register_group(agent_group)
    conf.register_cli_opts(agent_opts, group=agent_group)
    ks_loading.register_session_conf_options(conf, PLACEMENT_GROUP)
    ks_loading.register_auth_conf_options(conf, PLACEMENT_GROUP)
    ks_loading.register_adapter_conf_options(conf, PLACEMENT_GROUP)
    conf.set_default('service_type', 'placement', group=PLACEMENT_GROUP)
    conf.set_default('valid_interfaces', ['internal', 'public'],
                     group=PLACEMENT_GROUP)


def list_opts():
    """For oslo-config-generator (namespace
    tachyon_placement.topology_agent): the agent's options and, as Nova's
    sample lists them, the keystoneauth1 options of ``[placement]`` (the
    password plugins' among the auth plugins)."""
    placement = (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options('password')
        + ks_loading.get_auth_plugin_conf_options('v3password')
        + ks_loading.get_auth_plugin_conf_options('admin_token')
        + ks_loading.get_adapter_conf_options(include_deprecated=False))
    unique = {}
    for opt in placement:
        unique.setdefault(opt.dest, opt)
    # The defaults register_opts gives them (fresh Opt objects: safe).
    unique['service_type'].default = 'placement'
    unique['valid_interfaces'].default = ['internal', 'public']
    return [(agent_group, agent_opts),
            (PLACEMENT_GROUP, list(unique.values()))]


def adapter(conf):
    auth = ks_loading.load_auth_from_conf_options(conf, PLACEMENT_GROUP)
    session = ks_loading.load_session_from_conf_options(
        conf, PLACEMENT_GROUP, auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, PLACEMENT_GROUP, session=session, auth=auth)


def main(argv=None):
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    # An agent run by hand or by systemd: log to stderr unless told.
    conf.set_default('use_stderr', True)
    register_opts(conf)
    conf.register_cli_opts(cli_opts)
    conf(sys.argv[1:] if argv is None else argv, project='tachyon',
         prog='tachyon-topology-agent')
    tachyon_conf.setup_logging(conf, 'tachyon-topology-agent')
    opts = conf.topology_agent
    reader = agent.reader_for(opts.sysfs_root, opts.physical_device_mappings)
    if conf.print:
        json.dump(reader.document(), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write('\n')
        return 0
    publisher = agent.Publisher(adapter(conf), opts.host, reader)
    while True:
        try:
            outcome = publisher.publish_once()
            LOG.info('topology of %s: %s', opts.host, outcome)
        except Exception as exc:    # keep the agent alive; say why
            LOG.error('publishing the topology of %s failed: %s',
                      opts.host, exc)
            if conf.once or not opts.interval:
                return 1
        if conf.once or not opts.interval:
            return 0
        time.sleep(opts.interval)


if __name__ == '__main__':
    sys.exit(main())
