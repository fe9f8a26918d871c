"""An answer from Prometheus without one finite number (every value NaN,
Inf or text) is an outage of what it measures, not a measure: taken for
one, a host at 95 % was offered under a threshold's max of 90 with
``error: null``.  The run fails as a failed query does: the error in the
status, a log line, the last good values kept (until the staleness
limit)."""
import logging

from tachyon_placement.telemetry import collector as collector_module
from tachyon_placement.telemetry import metrics
from tachyon_placement.weighing import model


class _Prometheus:
    """Answers each query with ``self.values`` for host h1."""

    def __init__(self):
        self.values = ['95']

    def query(self, _query):
        return [{'metric': {'instance': 'h1:9100'}, 'value': [1.0, value]}
                for value in self.values]


def test_an_answer_without_numbers_is_an_outage(service, caplog):
    store, seed = service.app.store, service.seed
    host = seed.create_provider('h1')
    store.metrics.put(metrics.Metric.from_document('cpu', {
        'query': 'cpu', 'rewrite': {'pattern': ':9100$'}}), None)
    prometheus = _Prometheus()
    clock = [1000.0]
    collector = collector_module.Collector(
        store, prometheus, 60, model.ScorerBounds(timeout=2, memory_mib=64),
        clock=lambda: clock[0], staleness_limit=300)
    assert collector.collect_once() == 1
    assert store.metrics.runs()['cpu']['error'] is None
    assert store.metrics.values()['cpu'][1] == {host: 95.0}
    for answer in (['NaN'], ['+Inf', 'NaN'], ['not a number']):
        prometheus.values = answer
        clock[0] += 60
        with caplog.at_level(logging.WARNING):
            assert collector.collect_once() == 0
        run = store.metrics.runs()['cpu']
        assert 'finite number' in run['error'], run
        # The last good value is kept (it counts until the staleness
        # limit, as after a failed query).
        assert store.metrics.values()['cpu'][1] == {host: 95.0}
    assert 'cannot be collected' in caplog.text
    prometheus.values = ['40']
    clock[0] += 60
    assert collector.collect_once() == 1
    assert store.metrics.runs()['cpu']['error'] is None
    assert store.metrics.values()['cpu'][1] == {host: 40.0}


def test_series_that_name_no_provider_fail_the_run(service):
    """What the dry run refuses (no series names a provider) is said at
    every run, in the status: the metric gives no value until it does."""
    store = service.app.store
    store.metrics.put(metrics.Metric.from_document('cpu', {
        'query': 'cpu'}), None)
    collector = collector_module.Collector(
        store, _Prometheus(), 60,
        model.ScorerBounds(timeout=2, memory_mib=64), clock=lambda: 1000.0)
    assert collector.collect_once() == 0
    run = store.metrics.runs()['cpu']
    assert 'no series names a provider' in run['error'], run
    assert "instance='h1:9100'" in run['error'], run
