"""tachyon-status: checks an operator runs before and after an upgrade,
as ``placement-status`` (oslo.upgradecheck):

    tachyon-status --config-file /etc/placement/placement.conf upgrade check

Exit codes (oslo.upgradecheck's): 0 every check passed, 1 a warning (look
before going on), 2 a failure (the service will not work as it should),
255 a check could not run.
"""
import sys

import os_resource_classes
import os_traits
from oslo_config import cfg
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.graph import engine
from tachyon_placement.graph import migrations
from tachyon_placement.graph import schema
from tachyon_placement import policy
from tachyon_placement.telemetry import collector
from tachyon_placement.telemetry import metrics as telemetry_metrics

Result = upgradecheck.Result
Code = upgradecheck.Code

# What a release of Nova needs from the graph's standard traits (Nova
# 2026.2 marks what it owns with it).
REQUIRED_TRAITS = ('OWNER_NOVA',)


class Checks(upgradecheck.UpgradeCommands):
    """Each check opens what it needs; a graph that cannot be reached is
    a failure of the first check and the others that need it."""

    def __init__(self, conf):
        self.conf = conf
        self._store = None

    def _graph(self):
        if self._store is None:
            self._store = deploy.open_store(self.conf, sync=False)
        return self._store

    def _check_graph(self):
        try:
            version = self._graph().versions.graph()
        except Exception as exc:  # noqa: BLE001
            if _never_synced(exc):
                return Result(Code.FAILURE, 'The graph engine answers but '
                              'the graph is not set up: run '
                              '"tachyon-manage db sync".')
            return Result(Code.FAILURE, 'The graph engine cannot be reached '
                          '([graph] connection): %s' % exc)
        return Result(Code.SUCCESS, 'Graph engine %s reached, graph version '
                      '%d.' % (self._graph().engine.dialect, version.version))

    def _check_schema_version(self):
        try:
            restoring = self._graph().backups.unfinished(creating=False)
            found = self._graph().schema.version()
        except Exception as exc:  # noqa: BLE001
            return Result(Code.FAILURE, 'Cannot read the graph\'s schema '
                          'version: %s' % exc)
        if restoring is not None:
            return Result(Code.FAILURE, str(migrations.RestoreUnfinished(
                restoring)))
        known = schema.SCHEMA_VERSION
        if found is None:
            return Result(Code.FAILURE, 'The graph is empty: run '
                          '"tachyon-manage db sync".')
        if found > known:
            return Result(Code.FAILURE, str(migrations.NewerSchema(
                found, known)))
        if found < known:
            steps = migrations.pending(found, known)
            return Result(Code.WARNING, 'The graph has schema version %s, '
                          'this release %d: run "tachyon-manage db sync" '
                          '(the API also does on start) to %s.' % (
                              found if found != migrations.UNVERSIONED
                              else '0 (none recorded)', known,
                              '; '.join(step.summary for step in steps)))
        return Result(Code.SUCCESS, 'The graph has schema version %d, this '
                      'release\'s.' % known)

    def _check_standard_names(self):
        try:
            store = self._graph()
            classes = sorted(store.resource_classes.missing(
                os_resource_classes.STANDARDS))
            traits = sorted(store.traits.missing(os_traits.get_traits()))
        except Exception as exc:  # noqa: BLE001
            return Result(Code.FAILURE, 'Cannot read the graph: %s' % exc)
        if not classes and not traits:
            return Result(Code.SUCCESS, 'The graph has the %d standard '
                          'resource classes and %d traits of the installed '
                          'os-resource-classes and os-traits.' % (
                              len(os_resource_classes.STANDARDS),
                              len(os_traits.get_traits())))
        required = sorted(set(traits) & set(REQUIRED_TRAITS))
        message = ('The graph lacks standard names the installed libraries '
                   'define: resource classes %s; traits %s. Run '
                   '"tachyon-manage db sync" (or restart the API, which '
                   'syncs them).' % (', '.join(classes) or 'none',
                                     _few(traits)))
        if required:
            return Result(Code.FAILURE, message + ' Nova requires %s.'
                          % ', '.join(required))
        return Result(Code.WARNING, message)

    def _check_policy_rules(self):
        enforcer = policy.make_enforcer(self.conf,
                                        suppress_deprecation_warnings=True)
        try:
            enforcer.load_rules()
        except Exception as exc:  # noqa: BLE001
            return Result(Code.FAILURE, 'The policy file cannot be read: %s'
                          % exc)
        in_file = set(enforcer.file_rules)
        registered = enforcer.registered_rules
        deprecated = {rule.deprecated_rule.name: name
                      for name, rule in registered.items()
                      if getattr(rule, 'deprecated_rule', None) is not None}
        old = sorted(name for name in in_file
                     if name in deprecated and name not in registered)
        unknown = sorted(name for name in in_file
                         if name not in registered and name not in deprecated)
        if not old and not unknown:
            return Result(Code.SUCCESS, 'No deprecated or unknown rule in '
                          'the policy file.' if in_file else
                          'No policy file overrides: the defaults apply.')
        parts = []
        if old:
            parts.append('deprecated rules %s (use %s)' % (
                ', '.join(old),
                ', '.join(deprecated[name] for name in old)))
        if unknown:
            parts.append('rules no release of Tachyon or Placement '
                         'defines: %s' % ', '.join(unknown))
        return Result(Code.WARNING, 'The policy file has %s.'
                      % '; '.join(parts))

    def _check_telemetry(self):
        if not self.conf.telemetry.url:
            return Result(Code.SUCCESS, 'No [telemetry] url: nothing to '
                          'reach (Cypher scorers run in any case).')
        try:
            answer = collector.PrometheusSource(self.conf).query('vector(1)')
        except Exception as exc:  # noqa: BLE001
            return Result(Code.WARNING, '[telemetry] url %s cannot be '
                          'queried: %s. Metric weighers fall back to '
                          'Placement\'s order once their values are stale.'
                          % (self.conf.telemetry.url, exc))
        return Result(Code.SUCCESS, '[telemetry] url %s answers (%d '
                      'series for vector(1)).' % (self.conf.telemetry.url,
                                                  len(answer)))

    def _engine(self):
        """(the graph engine, None), or (None, the failure to reach it)."""
        try:
            return self._graph().engine, None
        except Exception as exc:  # noqa: BLE001
            return None, Result(Code.FAILURE, 'The graph engine cannot be '
                                'reached: %s' % exc)

    def _check_replication(self):
        acks = self.conf.graph.replica_acks
        graph_engine, failed = self._engine()
        if failed:
            return failed
        if graph_engine.dialect != 'falkordb':
            if acks:
                return Result(Code.WARNING, '[graph] replica_acks = %d is '
                              'for FalkorDB replicas; Neo4j ignores it.'
                              % acks)
            return Result(Code.SUCCESS, 'Neo4j: the server\'s own '
                          'availability (a cluster through neo4j://).')
        online, failed = _replication(graph_engine.replicas_online)
        if failed:
            return failed
        if acks > online:
            return Result(Code.FAILURE, '[graph] replica_acks = %d but the '
                          'primary has %d replicas online: every write will '
                          'be answered 503.' % (acks, online))
        if graph_engine.through_sentinel and not acks:
            return Result(Code.WARNING, 'Through Sentinel with '
                          '[graph] replica_acks = 0: a failover may lose the '
                          'last acknowledged writes (%d replicas online); set '
                          'replica_acks = 1.' % online)
        if not online:
            return Result(Code.SUCCESS, 'A single graph server (no '
                          'replica).')
        return Result(Code.SUCCESS, '%d replicas online; a write is answered '
                      'once %d hold it.' % (online, acks))

    def _check_replica_attributes(self):
        graph_engine, failed = self._engine()
        if failed:
            return failed
        if graph_engine.dialect != 'falkordb':
            return Result(Code.SUCCESS, 'Neo4j: replicas copy transactions, '
                          'not attribute numbers.')
        tables, failed = _replication(graph_engine.replica_attribute_tables)
        if failed:
            return failed
        (_, primary), replicas = tables[0], tables[1:]
        if not replicas:
            return Result(Code.SUCCESS, 'No replica.')
        unread = ['%s (%s)' % (server, names) for server, names in replicas
                  if isinstance(names, Exception)]
        differ = ['%s (%s)' % (server, _first_difference(primary, names))
                  for server, names in replicas
                  if not isinstance(names, Exception) and names != primary]
        if differ:
            return Result(Code.FAILURE, 'Replicas whose attribute names are '
                          'not the primary\'s, in order: %s. Their values '
                          'are stored under the wrong names: stop each, '
                          'delete its data and start it again as a replica '
                          '(a full copy), then run tachyon-manage db verify '
                          '(doc/source/admin/ha.rst).' % '; '.join(differ))
        if unread:
            return Result(Code.WARNING, 'Replicas that could not be read: '
                          '%s.' % '; '.join(unread))
        return Result(Code.SUCCESS, '%d replicas name the %d attributes as '
                      'the primary does, in order.'
                      % (len(replicas), len(primary)))

    def _check_numa_room(self):
        try:
            rules = self._graph().pci_affinity.list()
        except Exception as exc:  # noqa: BLE001
            return Result(Code.FAILURE, 'Cannot read the PCI-NUMA affinity '
                          'rules: %s' % exc)
        if not rules:
            return Result(Code.SUCCESS, 'No PCI-NUMA affinity rule.')
        name = self.conf.telemetry.numa_free_memory_metric
        if not name:
            return Result(Code.WARNING, '%d PCI-NUMA affinity rules, but no '
                          '[telemetry] numa_free_memory_metric: on hosts '
                          'whose trees do not model NUMA, a node\'s room is '
                          'its size in the published topology, whatever is '
                          'used there. Set it to a metric of target numa '
                          '(e.g. node_memory_numa_MemFree / 1048576).'
                          % len(rules))
        try:
            metric = self._graph().metrics.get(name)
        except Exception:  # noqa: BLE001 - NotFound or the engine
            metric = None
        if metric is None or metric.target != telemetry_metrics.NUMA:
            return Result(Code.FAILURE, '[telemetry] numa_free_memory_metric '
                          '= %s is no stored metric of target numa.' % name)
        return Result(Code.SUCCESS, 'NUMA rooms follow metric %s.' % name)

    def _check_whatif(self):
        options = self.conf.whatif
        if options.default_ttl > options.max_ttl:
            return Result(Code.FAILURE, '[whatif] default_ttl = %d is more '
                          'than max_ttl = %d: every POST /tachyon/sessions '
                          'that names no ttl will be refused.'
                          % (options.default_ttl, options.max_ttl))
        return Result(Code.SUCCESS, 'What-if sessions live %d s (at most '
                      '%d s), %d at once, %d consumers each.'
                      % (options.default_ttl, options.max_ttl,
                         options.max_sessions, options.max_consumers))

    def _check_policy_json(self):
        return common_checks.check_policy_json(self, self.conf)

    _upgrade_checks = (
        ('Graph engine', _check_graph),
        ('Schema version', _check_schema_version),
        ('Standard resource classes and traits', _check_standard_names),
        ('Policy rules', _check_policy_rules),
        ('Policy File JSON to YAML Migration', _check_policy_json),
        ('Telemetry', _check_telemetry),
        ('Graph replication', _check_replication),
        ('Replicas\' attribute names', _check_replica_attributes),
        ('NUMA room of PCI-NUMA affinity', _check_numa_room),
        ('What-if sessions', _check_whatif),
    )


def _never_synced(exc):
    """Whether reading the graph version failed because the engine holds
    no graph yet: FalkorDB has no such key, Neo4j answers no row."""
    return isinstance(exc, IndexError) or (
        isinstance(exc, engine.GraphError) and 'empty key' in str(exc))


def _replication(read):
    """(what ``read()`` gives, None), or (None, the failure to read the
    graph server's replication)."""
    try:
        return read(), None
    except engine.GraphError as exc:
        return None, Result(Code.FAILURE, 'Cannot read the graph server\'s '
                            'replication: %s' % exc)


def _first_difference(primary, replica):
    """Where two attribute tables part, in words."""
    for number, (ours, theirs) in enumerate(zip(primary, replica)):
        if ours != theirs:
            return 'attribute %d is %r there, %r on the primary' % (
                number, theirs, ours)
    return '%d attributes there, %d on the primary' % (len(replica),
                                                       len(primary))


def _few(names, shown=10):
    if not names:
        return 'none'
    more = len(names) - shown
    return ', '.join(names[:shown]) + (' and %d more' % more
                                       if more > 0 else '')


def main(argv=None):
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    return upgradecheck.main(conf, project='placement',
                             upgrade_command=Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
