"""usecases/drift.py changes(): what GET /tachyon/drift/changes answers
after a cursor, against a store whose recorder writes between the reads
(the telemetry collector records drift in another process)."""
import types

from tachyon_placement.usecases import drift


class _RecordingMeanwhile:
    """A store at graph version 6 with one drift change stamped 5; reading
    the head lets the recorder write another change (stamped 7) before the
    changes are read, as a collector in another process may."""

    def __init__(self):
        self.recorded = [(5, 'c-old', 'root', [{'kind': 'threshold'}])]
        self.head = 6
        self.versions = types.SimpleNamespace(written=self._written)
        self.changes = types.SimpleNamespace(floor=lambda: 0)
        self.drift = types.SimpleNamespace(since=self._since)
        self.worlds = types.SimpleNamespace(
            current=lambda: types.SimpleNamespace(records={}))

    def _written(self):
        head = self.head
        if head == 6:
            self.recorded.append((7, 'c-new', 'root', None))
            self.head = 7
        return head

    def _since(self, since, upto=2 ** 62):
        return [entry for entry in self.recorded
                if since < entry[0] <= upto]


def test_a_change_recorded_meanwhile_is_told_after_the_cursor_answered():
    store = _RecordingMeanwhile()
    first = drift.changes(store, 0)
    assert [(change['cursor'], change['consumer_uuid'])
            for change in first['changes']] == [(5, 'c-old')]
    assert first['cursor'] == 6
    assert all(change['cursor'] <= first['cursor']
               for change in first['changes'])
    # Resumed from the cursor answered: the change recorded meanwhile,
    # once.
    second = drift.changes(store, first['cursor'])
    assert [(change['cursor'], change['consumer_uuid'], change['drifted'])
            for change in second['changes']] == [(7, 'c-new', False)]
