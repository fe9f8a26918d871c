"""How a write that lost a race tries again.

An allocation or reshaper write reads the providers and consumers it
touches, checks the request against them and writes only if their
generations are still the ones it read.  When another writer got in
between, it reads again and retries, up to Placement's
``allocation_conflict_retry_count`` attempts.

Retrying at once makes writers that collided collide again: sixteen
writers claiming on one provider lost 16 % of their PUTs even with ten
attempts.  So attempts after the first wait a random time below an
exponentially growing ceiling ("full jitter"), which spreads the
colliders apart; the ceiling is capped so that the whole retry budget
stays under a second.

Writers of one process need not race at all: ``WriteLanes`` lets those
touching the same providers or consumers attempt one at a time (each
attempt, not the pauses), so retries are left for writers in other
processes.  Sixteen writer threads on one provider in one process: 16 %
of their PUTs ended in 409 without pauses, none with lanes; sixteen
writer processes, pauses alone: 0.2 %.
"""
import contextlib
import dataclasses
import random
import threading
import time

# The first retry waits up to 10 ms (a few writes on the embedded engine),
# then the ceiling doubles per attempt up to 320 ms: ten attempts wait
# 1.6 s at worst, only under contention like sixteen writer processes
# claiming on one provider back to back (0.2 % of PUTs still lose there;
# 1.4 % with ceilings of 5 to 200 ms).
FIRST_CEILING = 0.01
MAX_CEILING = 0.32


class WriteLanes:
    """Striped locks by provider or consumer uuid: attempts whose keys
    share a stripe go one at a time.  A fixed number of stripes bounds the
    memory; taking them in index order rules out deadlock."""

    def __init__(self, stripes=512):
        self._locks = [threading.Lock() for _ in range(stripes)]

    @contextlib.contextmanager
    def held(self, keys):
        indexes = sorted({hash(key) % len(self._locks) for key in keys})
        for index in indexes:
            self._locks[index].acquire()
        try:
            yield
        finally:
            for index in reversed(indexes):
                self._locks[index].release()


@dataclasses.dataclass
class ConflictRetries:
    """``attempts``: how many times to try a write at all (>= 1);
    ``lanes``: the process's ``WriteLanes`` (None: no local ordering)."""

    attempts: int
    lanes: WriteLanes = None
    first_ceiling: float = FIRST_CEILING
    max_ceiling: float = MAX_CEILING
    sleep: object = time.sleep
    uniform: object = random.random
    # Called before each attempt after the first (a metric counts them).
    on_retry: object = None

    def pause_ceiling(self, retry):
        """Longest wait before retry number ``retry`` (1 for the second
        attempt)."""
        return min(self.max_ceiling, self.first_ceiling * 2 ** (retry - 1))

    def __iter__(self):
        """Attempt numbers from 0, waiting before each one after the
        first; the caller stops iterating when its write went through."""
        for attempt in range(max(self.attempts, 1)):
            if attempt:
                if self.on_retry is not None:
                    self.on_retry()
                self.sleep(self.uniform() * self.pause_ceiling(attempt))
            yield attempt

    def lane(self, keys):
        """Hold this for one attempt on the providers and consumers
        ``keys``."""
        if self.lanes is None:
            return contextlib.nullcontext()
        return self.lanes.held(keys)

    def write(self, store, provider_uuids, consumer_uuids, attempt):
        """Run ``attempt`` (it reads, checks and writes; it returns whether
        its guarded write went through) until one goes through, each in
        this process's lane for those providers and consumers and in a
        write section of the store (whose reads take the engine's locks,
        see graph AllocationStore.write_states).  False when every
        attempt lost its race."""
        keys = set(provider_uuids) | set(consumer_uuids)
        for _attempt in self:
            written = False
            with self.lane(keys), store.allocations.locked_for_write(
                    keys) as section:
                written = attempt()
            # A section the engine rolled back (a deadlock found at
            # commit) wrote nothing.
            if written and not section.rolled_back:
                return True
        return False
