"""The options of Tachyon's Nova scheduler weigher, in nova.conf's
``[tachyon]`` group (registered by the weigher when nova-scheduler loads
it; listed for oslo-config-generator's namespace
``tachyon_placement.nova``)."""
from oslo_config import cfg

GROUP = 'tachyon'

OPTS = [
    cfg.FloatOpt(
        'weight_multiplier', default=1.0,
        help="Multiplier of Tachyon's host weights among Nova's weighers. "
             "Nova normalises each weigher's weights to 0..1 over the "
             "hosts it weighs and adds them up multiplied by their "
             "multipliers. Nova's RAM, CPU and disk weighers normalise "
             "free capacity against 0, so a few servers move them little, "
             "while its I/O operations weigher moves a building host by "
             "1: at 1.0 Tachyon's weighers break Nova's near-ties, at 10 "
             "they decide over Nova's defaults (the weighers guide has "
             "the measurements). 0 disables the weigher's effect (it "
             "still asks), negative values invert Tachyon's order. "
             "Overridden per host aggregate by its metadata key "
             "tachyon_weight_multiplier, as Nova's own multipliers are."),
    cfg.FloatOpt(
        'timeout', default=1.0, min=0.01,
        help="Seconds to wait for Tachyon's answer (to connect, and for "
             "each read of the reply). Past it, or on any error, the "
             "weigher weighs nothing for that request (every host 0: "
             "Nova's other weighers decide) and logs a warning once per "
             "outage."),
    cfg.StrOpt(
        'conf_group', default='placement',
        help="The nova.conf group of keystoneauth options (auth, session, "
             "adapter: endpoint, interface, region) the weigher reaches "
             "Tachyon with: by default Nova's own [placement] "
             "credentials and endpoint, the service Tachyon serves."),
]


def register(conf):
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
