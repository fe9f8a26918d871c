"""The collector's lease in the graph: one process collects; a clean
stop lets it go, so another process collects at its next cycle instead
of once the lease ran out (it was 54 s later)."""
from tachyon_placement.telemetry import collector
from tachyon_placement.weighing import model


def test_a_clean_stop_lets_the_lease_go(service):
    store = service.app.store
    first = collector.Collector(store, None, 30,
                                model.ScorerBounds(timeout=1, memory_mib=64))
    assert store.metrics.take_lease(first.holder, 60)
    first._held = True   # as collect_once marks it
    assert not store.metrics.take_lease('another-process', 60)
    first.stop()
    assert store.metrics.take_lease('another-process', 60)
    # A collector that never held it lets nothing go.
    second = collector.Collector(store, None, 30,
                                 model.ScorerBounds(timeout=1, memory_mib=64))
    second.stop()
    assert not store.metrics.take_lease(second.holder, 60)
