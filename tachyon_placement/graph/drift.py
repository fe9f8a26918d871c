"""Store.drift: the drift the watcher last recorded (usecases/drift.py),
as ``(:Drift {consumer, root, reasons, stamp})`` per drifted consumer and
``(:DriftTombstone {consumer, root, stamp})`` per consumer whose drift
ended: what ``GET /tachyon/drift/changes`` answers after a cursor.

Each write of a change moves the graph version once (its stamp), so a
drift change has a cursor on the change feed's clock; tombstones older
than the feed's floor are pruned with the feed's (graph/feed.py PRUNE).
The watcher writes only what changed: a drift that stays costs nothing.
"""
import json

from tachyon_placement.graph import engine
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement

HELD = Statement('drift_held', common="""
MATCH (d:Drift)
RETURN d.consumer AS consumer, d.root AS root, d.reasons AS reasons
""")

WRITE = Statement('drift_write', common="""
%s
CALL {
  WITH stamp
  UNWIND $drifted AS drifted
  MERGE (d:Drift {consumer: drifted.consumer})
  SET d.root = drifted.root, d.reasons = drifted.reasons, d.stamp = stamp
}
CALL {
  WITH stamp
  UNWIND $cleared AS cleared
  MATCH (d:Drift {consumer: cleared.consumer})
  DELETE d
  CREATE (:DriftTombstone {consumer: cleared.consumer, root: cleared.root,
                           stamp: stamp})
}
RETURN stamp
""" % versioning.BUMP)

SINCE = Statement('drift_since', common="""
MATCH (d:Drift) WHERE d.stamp > $since AND d.stamp <= $upto
RETURN d.consumer AS consumer, d.root AS root, d.reasons AS reasons,
       d.stamp AS stamp
""")

GONE = Statement('drift_gone', common="""
MATCH (gone:DriftTombstone) WHERE gone.stamp > $since
  AND gone.stamp <= $upto
RETURN gone.consumer AS consumer, gone.root AS root, gone.stamp AS stamp
""")


class DriftStore(engine.ResourceStore):
    """The recorded drift."""

    def held(self):
        """{consumer uuid: (root uuid, reasons)} recorded now."""
        return {row['consumer']: (row['root'], json.loads(row['reasons']))
                for row in self.engine.read(HELD)}

    def write(self, drifted, cleared):
        """Record ``drifted`` [(consumer, root, reasons)] and end the drift
        of ``cleared`` [(consumer, root)], at one new graph version (its
        stamp)."""
        rows = self.engine.write(
            WRITE,
            drifted=[{'consumer': consumer, 'root': root,
                      'reasons': json.dumps(reasons, sort_keys=True)}
                     for consumer, root, reasons in drifted],
            cleared=[{'consumer': consumer, 'root': root}
                     for consumer, root in cleared])
        return rows[0]['stamp']

    def since(self, since, upto=2 ** 62):
        """[(stamp, consumer, root, reasons or None when it ended)] of the
        changes stamped in (``since``, ``upto``], in stamp order, the last
        of each consumer only."""
        latest = {}
        for row in self.engine.read(GONE, since=since, upto=upto):
            latest[row['consumer']] = (row['stamp'], row['consumer'],
                                       row['root'], None)
        for row in self.engine.read(SINCE, since=since, upto=upto):
            known = latest.get(row['consumer'])
            if known is None or known[0] < row['stamp']:
                latest[row['consumer']] = (row['stamp'], row['consumer'],
                                           row['root'],
                                           json.loads(row['reasons']))
        return sorted(latest.values())
