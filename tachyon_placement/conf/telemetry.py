from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

telemetry_group = cfg.OptGroup(
    'telemetry', title='Telemetry for weighers',
    help="Where metric weighers get their values: Prometheus, or Aetos "
         "(OpenStack's Keystone-aware Prometheus proxy, which serves the "
         "same /api/v1/query). With a Keystone auth_type in this section "
         "Tachyon authenticates as a service user and sends its token; the "
         "user needs the service (or admin) role to read host metrics "
         "through Aetos. Unset url: no telemetry, metric weighers score "
         "nothing.")

telemetry_opts = [
    cfg.URIOpt(
        'url', schemes=('http', 'https'),
        help="Base URL of Prometheus (http://prometheus:9090) or of Aetos "
             "(its metric-storage endpoint, e.g. http://host/prometheus); "
             "queries go to <url>/api/v1/query."),
    cfg.IntOpt(
        'refresh_interval', default=30, min=1,
        help="Seconds between two collections of every metric. One API "
             "process of the deployment collects at a time (a lease in the "
             "graph); the others read what it stored."),
    cfg.FloatOpt(
        'query_timeout', default=5.0, min=0.1,
        help="Seconds one query may take (sent to Prometheus as its query "
             "timeout too)."),
    cfg.FloatOpt(
        'scorer_timeout', default=2.0, min=0.1, max=60,
        help="Seconds one run of a Cypher scorer may take, when it is "
             "checked (PUT /tachyon/weighers) and at each collection. "
             "Scorers run in a private FalkorDB sandbox server, never in "
             "the engine that serves the API (on FalkorDB a replica of "
             "it, on Neo4j a copy exported from it)."),
    cfg.IntOpt(
        'scorer_memory_limit', default=256, min=16, max=65536,
        help="MiB of memory one run of a Cypher scorer may take: the "
             "sandbox server's QUERY_MEM_CAPACITY, and the sandbox is "
             "killed when it grows more than this past its size with the "
             "graph. A scorer that breaks a bound at collection is "
             "disabled until its weigher is stored again."),
    cfg.IntOpt(
        'staleness_limit', default=300, min=1,
        help="Seconds after which a metric's last values stop counting: "
             "its weighers then score nothing (Placement's order, unless "
             "other weighers apply)."),
    cfg.BoolOpt(
        'verify', default=True,
        help="Verify the TLS certificate of an https URL."),
    cfg.StrOpt(
        'numa_free_memory_metric',
        help="The name of a metric of target numa (/tachyon/metrics) whose "
             "values are the MiB of memory free on each NUMA node of a "
             "host, e.g. from node_exporter: node_memory_numa_MemFree / "
             "1048576. The PCI-NUMA affinity rules then count a NUMA node "
             "of a host whose provider tree does not model NUMA as having "
             "room for an instance only when that much is free there (its "
             "size in the published topology otherwise, or when the values "
             "are stale)."),
]


def register_opts(conf):
    conf.register_group(telemetry_group)
    conf.register_opts(telemetry_opts, group=telemetry_group)
    ks_loading.register_auth_conf_options(conf, telemetry_group.name)
    ks_loading.register_session_conf_options(conf, telemetry_group.name)


def list_opts():
    return {telemetry_group.name: telemetry_opts
            + ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()}
