"""The collector: queries every metric (and runs every Cypher scorer) in
the background and stores the values per provider, in one API process of
the deployment at a time.

Every API process runs a collector thread when ``[telemetry] url`` is
set; each cycle it takes or renews a lease in the graph, and only the
holder queries (a dead holder's lease runs out after two intervals and
another process takes over).  Requests never wait on it: they read the
values it stored last.  Prometheus or Aetos down, slow or answering
garbage: that metric keeps its last values (which stop counting after the
staleness limit), one warning is logged per outage and one line when it
is over.
"""
import atexit
import logging as std_logging
import threading
import time
import uuid

from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging
import prometheus_api_client
from urllib3.util import retry as urllib3_retry

from tachyon_placement.graph import engine as graph_engine
from tachyon_placement.monitoring import metrics as monitoring
from tachyon_placement.weighing import model as weighing_model

LOG = logging.getLogger(__name__)

# How many refresh intervals a lease lasts without being renewed.
LEASE_INTERVALS = 2


class PrometheusSource:
    """Instant queries to Prometheus or Aetos (the same /api/v1/query),
    with a Keystone token when ``[telemetry]`` has an auth_type."""

    def __init__(self, conf):
        opts = conf.telemetry
        self.timeout = opts.query_timeout
        self._session = None
        auth = ks_loading.load_auth_from_conf_options(conf, 'telemetry')
        if auth is not None:
            self._session = ks_loading.load_session_from_conf_options(
                conf, 'telemetry', auth=auth)
        # No retries: a failed query waits for the next cycle, which
        # keeps a cycle's length bounded by the timeout.
        self._client = prometheus_api_client.PrometheusConnect(
            url=opts.url.rstrip('/'), disable_ssl=not opts.verify,
            retry=urllib3_retry.Retry(total=0), timeout=self.timeout)

    def query(self, promql):
        """The series of an instant query ([{'metric', 'value'}])."""
        if self._session is not None:
            self._client.headers = {'X-Auth-Token':
                                    self._session.get_token()}
        result = self._client.custom_query(
            promql, params={'timeout': '%gs' % self.timeout})
        if not (isinstance(result, list) and all(
                isinstance(item, dict)
                and isinstance(item.get('metric'), dict)
                and isinstance(item.get('value'), list)
                and len(item['value']) == 2 for item in result)):
            raise ValueError('not an instant vector: %.200r' % (result,))
        return result


class Collector:
    """One cycle: ``collect_once``; the thread: ``start``/``stop``.

    It collects the metrics from ``source`` (None: no Prometheus
    configured) and runs the weighers' Cypher scorers (each within
    ``query_timeout`` seconds), storing their results beside the metrics'
    values (weighing.model.cypher_signal).
    """

    def __init__(self, store, source, interval, scorer_bounds,
                 clock=time.time, staleness_limit=None):
        self.store = store
        self.source = source
        self.interval = interval
        self.scorer_bounds = scorer_bounds
        self.clock = clock
        # Seconds after which a source's last values stop counting (for
        # the count of providers with stale values); None: never.
        self.staleness_limit = staleness_limit
        self.holder = uuid.uuid4().hex
        self._failing = set()   # metrics in an outage (warned once)
        self._disabled = set()  # scorers that broke their bounds
        self._held = False      # whether it took the lease
        # What else runs each cycle in the one process that holds the
        # lease, after the sources (the composition root adds them):
        # objects with wanted() (is there anything to do: then the lease
        # is taken even with nothing to collect) and run().
        self.followers = []
        self._stop = threading.Event()
        self._thread = None

    def _sources(self):
        """[(name to store under, what to call it in logs, how to get
        (its values, what the run found))] of everything there is to
        collect."""
        sources = []
        world = self.store.worlds.current()
        if self.source is not None:
            roots_by_name = {record.provider.name: record.uuid
                             for record in world.roots}
            for metric in self.store.metrics.list():
                sources.append((metric.name, 'metric %s' % metric.name,
                                lambda metric=metric: metric.collected(
                                    self.source.query(metric.query),
                                    roots_by_name, world.records)))
        queries = {weigher.scorer['query'] for weigher in world.weighers
                   if weigher.scorer['type'] == weighing_model.CYPHER}
        # A scorer scores providers: more rows than there are providers
        # (and a margin) is a query gone wrong, capped in the engine.
        max_rows = len(world.records) + 1000
        disabled = self.store.scorers.disabled_signals() if queries else {}
        self._disabled = set()
        for query in sorted(queries):
            signal = weighing_model.cypher_signal(query)
            if signal in disabled:
                self._disabled.add(signal)   # kept while a weigher has it
                continue
            sources.append((signal, 'Cypher scorer %.60r' % query,
                            lambda query=query: _scored(
                                self.store.scorers.scores(
                                    query, self.scorer_bounds, max_rows))))
        return sources

    def collect_once(self):
        """Collect everything if this process holds the lease; how many
        sources it stored (None: nothing to collect, or another process
        collects)."""
        sources = self._sources()
        followers = [follower for follower in self.followers
                     if follower.wanted()]
        if not (sources or followers) or not self.store.metrics.take_lease(
                self.holder, self.interval * LEASE_INTERVALS):
            # Another process collects (or nothing is to be): no copy of
            # the graph kept here for scorers.
            self.store.scorers.drop_copy()
            return None
        self._held = True
        if not any(name.startswith(weighing_model.CYPHER + ':')
                   for name, _, _ in sources):
            self.store.scorers.drop_copy()
        stored = 0
        previous = self.store.metrics.runs()
        for name, label, collect in sources:
            run = _Run(name, label, self.clock(), previous.get(name))
            try:
                values, facts = collect()
            except graph_engine.QueryBoundBroken as exc:
                # Run again every cycle it would take its bounds again.
                LOG.warning('Telemetry: %s broke its bounds (%s): disabled '
                            'until its weigher is stored again', label, exc)
                self.store.scorers.disable_signal(
                    name, str(exc), int(self.clock() * 1000))
                self._ran(run.failed(self.clock(), exc, disabled=True))
                continue
            except Exception as exc:  # noqa: BLE001 - one bad source (an
                # outage, garbage, a definition gone wrong) must not keep
                # the others from being collected.
                if name not in self._failing:
                    self._failing.add(name)
                    LOG.warning('Telemetry: %s cannot be collected (%s); '
                                'its last values count until they are '
                                'older than the staleness limit',
                                label, exc)
                self._ran(run.failed(self.clock(), exc))
                continue
            if name in self._failing:
                self._failing.discard(name)
                LOG.info('Telemetry: %s is collected again', label)
            if facts.get('out_of_bounds_values'):
                LOG.warning('Telemetry: %s: %d values outside the metric\'s '
                            'bounds dropped (those providers have no value)',
                            label, facts['out_of_bounds_values'])
            self.store.metrics.store_values(
                name, values, int(self.clock() * 1000))
            self._ran(run.succeeded(self.clock(), facts))
            stored += 1
        if sources:
            self.store.metrics.drop_values(
                {name for name, _, _ in sources} | self._disabled)
        for follower in followers:
            try:
                follower.run()
            except Exception as exc:  # noqa: BLE001 - the collector lives
                LOG.warning('Telemetry: %s failed (%s)',
                            type(follower).__name__, exc)
        return stored

    def _ran(self, status):
        """Keep what a run of one source found, for the status route and
        the metrics; the status of a failed run counts providers whose
        last values are past the staleness limit."""
        if status['error'] is not None:
            age = (self.clock() - status['last_success']
                   if status['last_success'] is not None else None)
            status['providers_stale'] = (
                status['providers_matched'] or 0
                if self.staleness_limit is not None and age is not None
                and age > self.staleness_limit else 0)
        try:
            self.store.metrics.store_run(status['name'], status)
        except Exception as exc:  # noqa: BLE001 - the values came first
            LOG.warning('Telemetry: the status of %s was not stored (%s)',
                        status['label'], exc)
        monitoring.collector_run(status)

    def _run(self):
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.collect_once()
            except Exception:  # noqa: BLE001 - the thread must live on
                LOG.exception('Telemetry: collection failed')
            self._stop.wait(max(0.0, self.interval
                                - (time.monotonic() - started)))

    def start(self):
        # urllib3 logs every refused connection at WARNING: one line per
        # outage is ours to write.
        std_logging.getLogger('urllib3.connectionpool').setLevel(
            std_logging.ERROR)
        self._thread = threading.Thread(target=self._run,
                                        name='telemetry-collector',
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        # A clean stop lets the lease go: another process collects at its
        # next cycle, not once the lease ran out.
        if not self._held:
            return
        self._held = False
        try:
            self.store.metrics.release_lease(self.holder)
        except Exception as exc:  # noqa: BLE001 - the engine may be gone
            LOG.warning('Telemetry: the lease could not be let go (%s)', exc)


def _scored(scores):
    """A Cypher scorer's (values, what the run found)."""
    return scores, {'providers_matched': len(scores)}


class _Run:
    """One run of one source: what the status route and the metrics show
    of it (times are seconds since the epoch)."""

    def __init__(self, name, label, started, previous):
        self.name = name
        self.label = label
        self.started = started
        self.previous = previous or {}

    def _status(self, finished, error, facts, last_success):
        status = {
            'name': self.name, 'label': self.label,
            'kind': ('cypher_scorer'
                     if self.name.startswith(weighing_model.CYPHER + ':')
                     else 'metric'),
            'last_run': finished, 'duration': finished - self.started,
            'error': error, 'last_success': last_success,
            'series': None, 'providers_matched': None,
            'unmatched_series': None, 'non_finite_values': None,
            'out_of_bounds_values': None,
            'providers_stale': 0, 'disabled': False}
        status.update(facts)
        return status

    def succeeded(self, finished, facts):
        return self._status(finished, None, facts, finished)

    def failed(self, finished, exc, disabled=False):
        # What the last good run found still describes the values kept.
        facts = {key: self.previous.get(key) for key in (
            'series', 'providers_matched', 'unmatched_series',
            'non_finite_values', 'out_of_bounds_values')}
        status = self._status(finished, str(exc)[:500], facts,
                              self.previous.get('last_success'))
        status['disabled'] = disabled
        return status


def start_collector(conf, store, followers=()):
    """The collector of this process, running: it queries Prometheus or
    Aetos when ``[telemetry] url`` is set, and runs the Cypher scorers of
    the weighers in any case, and ``followers`` (see Collector.followers)
    after them (it takes the lease only when there is something to
    collect or to follow)."""
    source = PrometheusSource(conf) if conf.telemetry.url else None
    collector = Collector(store, source, conf.telemetry.refresh_interval,
                          weighing_model.ScorerBounds.from_conf(conf),
                          staleness_limit=conf.telemetry.staleness_limit)
    collector.followers.extend(followers)
    atexit.register(collector.stop)
    return collector.start()
