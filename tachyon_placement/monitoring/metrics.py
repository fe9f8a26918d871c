"""Tachyon's Prometheus metrics (prometheus-client).

Nothing is recorded until ``enable()`` (deploy.loadapp, when ``[metrics]
enabled``): each recording function below then costs one label lookup
and one add; before, one ``None`` test.  prometheus-client is imported
only then, so that its multiprocess mode can be chosen first.

Under gunicorn every worker is a process of its own: with
``PROMETHEUS_MULTIPROC_DIR`` set (tachyon_placement.wsgi.gunicorn sets
it up, a private directory per server) each worker writes its values
there and ``exposition()``, from any worker, sums them all (counters and
histograms summed, gauges as each metric says: ``livemax`` the largest
of the live workers, ``livesum`` their sum).

Labels are low-cardinality only: a route's template (never a uuid), a
method, a status, a microversion, an error code, an engine, an operator's
metric or weigher name.
"""
import os
import threading

MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'

# Seconds: requests and candidate searches from a millisecond (a cached
# read) to the 60 s a client gives up at.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                   0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Candidates in one answer (Nova asks for up to 1,000).
COUNT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000)
# Seconds a refresh of the copy of the graph takes (one read to a reload).
REFRESH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_lock = threading.Lock()
_recorder = None    # the process's _Recorder once enabled


class _Recorder:
    """The metric objects, made once per process."""

    def __init__(self):
        import prometheus_client as prom

        def gauge(name, text, labels=(), mode='livemax'):
            return prom.Gauge(name, text, labels, multiprocess_mode=mode)

        self.requests = prom.Counter(
            'tachyon_http_requests_total',
            'HTTP requests answered, by route template, method, status and '
            'microversion (Placement\'s, or Tachyon\'s own under /tachyon).',
            ('route', 'method', 'status', 'microversion'))
        self.request_seconds = prom.Histogram(
            'tachyon_http_request_duration_seconds',
            'Time to answer an HTTP request (to its first byte for a '
            'stream), by route template, method, status and microversion.',
            ('route', 'method', 'status', 'microversion'),
            buckets=LATENCY_BUCKETS)
        self.errors = prom.Counter(
            'tachyon_http_errors_total',
            'Error answers by route template, status and error code (a '
            '409 placement.concurrent_update is a generation conflict the '
            'client retries).',
            ('route', 'status', 'code'))
        self.searches = prom.Histogram(
            'tachyon_candidate_search_duration_seconds',
            'Time of an allocation candidate search (GET '
            '/allocation_candidates and explain), weighed or in '
            'Placement\'s order.', ('weighed',), buckets=LATENCY_BUCKETS)
        self.candidates = prom.Histogram(
            'tachyon_candidates_returned',
            'Allocation requests a candidate search returned.',
            ('weighed',), buckets=COUNT_BUCKETS)
        self.world_refresh = prom.Histogram(
            'tachyon_world_refresh_duration_seconds',
            'Time to move the process\'s copy of the graph to the '
            'engine\'s version (patched, or read anew).', ('kind',),
            buckets=REFRESH_BUCKETS)
        self.world_lag = gauge(
            'tachyon_world_version_lag',
            'Graph versions the copy of the graph was behind the engine '
            'when last refreshed (the largest among live workers).')
        self.world_version = gauge(
            'tachyon_world_version',
            'Graph version of the process\'s copy of the graph.')
        self.world_providers = gauge(
            'tachyon_world_providers',
            'Resource providers the process\'s copy of the graph holds.')
        self.engine_calls = prom.Counter(
            'tachyon_engine_round_trips_total',
            'Statements sent to the graph engine, by engine and kind '
            '(read or write).', ('engine', 'kind'))
        self.engine_errors = prom.Counter(
            'tachyon_engine_errors_total',
            'Statements the graph engine failed (unreachable, refused, '
            'timed out), by engine and kind.', ('engine', 'kind'))
        self.engine_reconnects = prom.Counter(
            'tachyon_engine_reconnects_total',
            'New connections to the graph engine after a failed one.',
            ('engine',))
        self.write_retries = prom.Counter(
            'tachyon_allocation_write_retries_total',
            'Allocation or reshape write attempts made again after a '
            'provider or consumer changed under them.')

        # The collector: one process holds its lease at a time; these
        # are that process's last word on each source (metric or Cypher
        # scorer), kept when it dies (a timestamp's "max").
        source = ('source', 'kind')
        self.collector_success = gauge(
            'tachyon_telemetry_last_success_timestamp_seconds',
            'When the collector last collected a source (a metric, or a '
            'weigher\'s Cypher scorer) without error.', source, 'max')
        self.collector_duration = gauge(
            'tachyon_telemetry_run_duration_seconds',
            'How long the last run of a source took.', source, 'mostrecent')
        self.collector_failing = gauge(
            'tachyon_telemetry_source_failing',
            '1 while the last run of a source failed (Prometheus down, an '
            'answer that is no instant vector, a scorer past its bounds).',
            source, 'mostrecent')
        self.collector_series = gauge(
            'tachyon_telemetry_series',
            'Series the last good run of a metric returned.', source,
            'mostrecent')
        self.collector_matched = gauge(
            'tachyon_telemetry_providers_matched',
            'Providers the last good run of a source gave a value.', source,
            'mostrecent')
        self.collector_unmatched = gauge(
            'tachyon_telemetry_unmatched_series',
            'Series of the last good run of a metric that named no '
            'provider.', source, 'mostrecent')
        self.collector_stale = gauge(
            'tachyon_telemetry_providers_stale',
            'Providers whose last value of a failing source is older than '
            '[telemetry] staleness_limit (it no longer counts).', source,
            'mostrecent')
        self.collector_failures = prom.Counter(
            'tachyon_telemetry_run_failures_total',
            'Runs of a source that failed.', source)
        self.collector_dropped = prom.Counter(
            'tachyon_telemetry_values_dropped_total',
            'Values of a metric the collector dropped: no finite number '
            '(NaN, +/-Inf), or outside the metric\'s bounds.',
            source + ('reason',))

        # The change feed's server (tachyon-feed, or the built-in
        # server's own): its subscribers, how far its log reached, why
        # answers and streams ended.
        self.feed_subscribers = gauge(
            'tachyon_feed_subscribers',
            'Requests the change feed server holds (streams and long '
            'polls).', mode='livesum')
        self.feed_head = gauge(
            'tachyon_feed_head_version',
            'The graph version the change feed\'s log reached (compare '
            'with tachyon_world_version of the API: the feed\'s lag).')
        self.feed_events = prom.Counter(
            'tachyon_feed_events_total',
            'Change feed answers and stream ends by kind: busy (503), gone '
            '(410, a stream ended by a cursor past retention), '
            'slow_readers and client_gone (disconnects), streams_ended '
            '(at max_stream_seconds).', ('event',))

    def request(self, route, method, status, microversion, seconds,
                code=None):
        labels = (route, method, str(status), microversion)
        self.requests.labels(*labels).inc()
        self.request_seconds.labels(*labels).observe(seconds)
        if status >= 400:
            self.errors.labels(route, str(status), code or 'none').inc()


# The kinds of change feed events (feed_event) and of refreshes of the
# copy of the graph (world_refreshed).
FEED_EVENTS = ('busy', 'gone', 'slow_readers', 'client_gone',
               'streams_ended')
REFRESHES = ('patched', 'reloaded')


def enable(engine=None):
    """Record from now on (idempotent).  Every series whose labels are
    known now is exported at zero from the start (``engine``: the graph
    engine's dialect): under gunicorn a series appears only once a
    process made it, and a dashboard or an absent() rule cannot tell
    "none yet" from "not exported"."""
    global _recorder
    with _lock:
        if _recorder is None:
            _recorder = _Recorder()
        recorder = _recorder
    for event in FEED_EVENTS:
        recorder.feed_events.labels(event)
    for weighed in ('true', 'false'):
        recorder.searches.labels(weighed)
        recorder.candidates.labels(weighed)
    for kind in REFRESHES:
        recorder.world_refresh.labels(kind)
    if engine is not None:
        for kind in ('read', 'write'):
            recorder.engine_calls.labels(engine, kind)
            recorder.engine_errors.labels(engine, kind)
        recorder.engine_reconnects.labels(engine)


def enabled():
    return _recorder is not None


def multiprocess():
    """Whether the values of every worker of a server are summed (see the
    module's docstring)."""
    return bool(os.environ.get(MULTIPROC_ENV))


def _registry():
    """The registry to read: every worker's values in multiprocess mode,
    else this process's."""
    import prometheus_client as prom
    from prometheus_client import multiprocess as prom_multiprocess
    if multiprocess():
        registry = prom.CollectorRegistry()
        prom_multiprocess.MultiProcessCollector(registry)
        return registry
    return prom.REGISTRY


def exposition():
    """(content type, body) of every metric of this server, in
    Prometheus' text format."""
    import prometheus_client as prom
    return prom.CONTENT_TYPE_LATEST, prom.generate_latest(_registry())


def serve(host, port):
    """Answer scrapes on ``host``:``port`` (any path, no authentication)
    from a thread of this process; the HTTP server."""
    import prometheus_client as prom
    server, _thread = prom.start_http_server(port, addr=host,
                                             registry=_registry())
    return server


# -- recording: no-ops until enable() -----------------------------------

def request(route, method, status, microversion, seconds, code=None):
    recorder = _recorder
    if recorder is not None:
        recorder.request(route, method, status, microversion, seconds, code)


def candidate_search(weighed, seconds, returned):
    recorder = _recorder
    if recorder is not None:
        label = 'true' if weighed else 'false'
        recorder.searches.labels(label).observe(seconds)
        recorder.candidates.labels(label).observe(returned)


def world_refreshed(kind, seconds, lag, version, providers):
    """The copy of the graph moved (``kind``: patched or reloaded) in
    ``seconds`` from ``lag`` versions behind, to ``version`` with
    ``providers``."""
    recorder = _recorder
    if recorder is not None:
        recorder.world_refresh.labels(kind).observe(seconds)
        recorder.world_lag.set(lag)
        recorder.world_version.set(version)
        recorder.world_providers.set(providers)


def engine_call(engine, kind, failed=False):
    recorder = _recorder
    if recorder is not None:
        recorder.engine_calls.labels(engine, kind).inc()
        if failed:
            recorder.engine_errors.labels(engine, kind).inc()


def engine_reconnect(engine):
    recorder = _recorder
    if recorder is not None:
        recorder.engine_reconnects.labels(engine).inc()


def collector_run(status):
    """What the collector's run of one source found (the status the
    telemetry status route shows: name, kind, duration, error,
    last_success, series, providers_matched, unmatched_series,
    providers_stale)."""
    recorder = _recorder
    if recorder is None:
        return
    labels = (status['name'], status['kind'])
    # Counters of the source at zero from its first run.
    recorder.collector_failures.labels(*labels)
    for reason in ('not_finite', 'out_of_bounds'):
        recorder.collector_dropped.labels(*labels, reason)
    recorder.collector_duration.labels(*labels).set(status['duration'])
    failing = status['error'] is not None
    recorder.collector_failing.labels(*labels).set(1 if failing else 0)
    recorder.collector_stale.labels(*labels).set(
        status.get('providers_stale') or 0)
    if failing:
        recorder.collector_failures.labels(*labels).inc()
    if status.get('last_success') is not None:
        recorder.collector_success.labels(*labels).set(
            status['last_success'])
    for reason, key in (('not_finite', 'non_finite_values'),
                        ('out_of_bounds', 'out_of_bounds_values')):
        if status.get(key) and not failing:
            recorder.collector_dropped.labels(*labels, reason).inc(
                status[key])
    for gauge, key in ((recorder.collector_series, 'series'),
                       (recorder.collector_matched, 'providers_matched'),
                       (recorder.collector_unmatched, 'unmatched_series')):
        if status.get(key) is not None:
            gauge.labels(*labels).set(status[key])


def feed_subscribers(held):
    recorder = _recorder
    if recorder is not None:
        recorder.feed_subscribers.set(held)


def feed_head(version):
    recorder = _recorder
    if recorder is not None:
        recorder.feed_head.set(version)


def feed_event(event):
    recorder = _recorder
    if recorder is not None:
        recorder.feed_events.labels(event).inc()


def write_retried():
    recorder = _recorder
    if recorder is not None:
        recorder.write_retries.inc()
