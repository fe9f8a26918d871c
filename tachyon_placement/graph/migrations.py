"""The graph's schema version and the steps that bring an older graph to it.

``Store.sync`` (``tachyon-manage db sync``, and each API process's start)
reads the version recorded on the graph, refuses a graph a newer release
wrote (this code would misread it), runs the steps from the recorded
version up to schema.SCHEMA_VERSION, then records it.  Steps are
idempotent: two processes starting together may both run one, and a step
interrupted half-way is run again by the next sync.
"""
import collections

from tachyon_placement.graph import engine
from tachyon_placement.graph import schema

# The version a graph written before versions were recorded counts as.
UNVERSIONED = 0

# One step: the version it brings the graph to, what it changes (shown by
# db sync), and the function (store) -> None that does it.
Step = collections.namedtuple('Step', 'version summary apply')


def _record_only(store):
    """Version 1 is the shape of every earlier release: the first version
    recorded, nothing to rewrite."""


STEPS = (
    Step(1, 'record the schema version (the shape is unchanged)',
         _record_only),
)


class Refused(Exception):
    """The graph is not one this release may serve or change as it is."""


class NewerSchema(Refused):
    """The graph was written by a release with a newer schema."""

    def __init__(self, found, known):
        super().__init__(
            'The graph has schema version %d, written by a newer release of '
            'Tachyon; this release knows versions up to %d and will not '
            'read or change it. Run the newer release (or restore a backup '
            'taken before the upgrade).' % (found, known))
        self.found = found
        self.known = known


class RestoreUnfinished(Refused):
    """A restore into the graph began and did not finish."""

    def __init__(self, source):
        super().__init__(
            'A restore of %s into the graph did not finish: run "tachyon-'
            'manage db restore" again (it starts from an empty graph).'
            % source)
        self.source = source


class SchemaStore(engine.ResourceStore):
    """Store.schema: the version of the graph's shape."""

    def version(self, creating=False):
        """The recorded schema version; UNVERSIONED for a graph holding
        data but no version; None for an empty graph (``creating``: see
        ResourceStore.read_latest)."""
        rows = self.read_latest(schema.SCHEMA_READ, creating)
        if not rows:
            return None
        row = rows[0]
        if row['version'] is not None:
            return row['version']
        return UNVERSIONED if row['populated'] else None

    def record(self, version):
        self.engine.write(schema.SCHEMA_RECORD, version=version)


def pending(found, target=schema.SCHEMA_VERSION):
    """The steps that bring a graph at ``found`` (None: empty) to
    ``target``; raises NewerSchema for a graph past it."""
    if found is None:
        return []   # a new graph is made in the current shape
    if found > target:
        raise NewerSchema(found, target)
    return [step for step in STEPS if found < step.version <= target]
