"""How long this process waits for a sandbox's answer is the sandbox's
own bound (its query's timeout, the watchdog's grace, a slack), never a
client library's default.

Found by CI: redis-py 8 reads with a 5 s timeout unless told otherwise;
the check of a weigher's query, in a sandbox at nice 10 on a machine
running two test suites, answered after that, and the operator's PUT got
a 500 ("Timeout reading from socket").  Here a sandbox is stopped
(SIGSTOP) while it holds a query, so its answer comes late by a known
amount, whatever the machine's load."""
import collections
import os
import signal
import threading
import time

import pytest

from tachyon_placement import processes
from tachyon_placement.processes import sandbox as sandboxes

Bounds = collections.namedtuple('Bounds', 'timeout memory_mib max_rows')
QUERY = 'UNWIND [1, 2] AS n RETURN toString(n) AS uuid, n AS score'


def _late(sandbox, seconds):
    """Stop ``sandbox`` now and let it go on ``seconds`` later."""
    os.kill(sandbox.pid, signal.SIGSTOP)
    resume = threading.Timer(
        seconds, lambda: os.kill(sandbox.pid, signal.SIGCONT))
    resume.start()
    return resume


def test_an_answer_later_than_redis_default_within_the_bound_is_taken():
    sandbox = sandboxes.Sandbox(Bounds(20.0, 256, 10)).start()
    try:
        resume = _late(sandbox, 6.5)
        started = time.monotonic()
        columns, rows = sandbox.query(QUERY)
        took = time.monotonic() - started
        resume.join()
        assert columns == ['uuid', 'score']
        assert sorted(rows) == [[b'1', 1], [b'2', 2]]
        assert 6.0 < took < 20.0, took
    finally:
        sandbox.stop()


def test_an_answer_past_the_bound_breaks_it_in_time():
    sandbox = sandboxes.Sandbox(Bounds(1.0, 256, 10)).start()
    try:
        resume = _late(sandbox, 8.0)
        started = time.monotonic()
        with pytest.raises(processes.SandboxBroken,
                           match='did not end within 1 s'):
            sandbox.query(QUERY)
        took = time.monotonic() - started
        # The watchdog's deadline (timeout + GRACE), not the 8 s the
        # sandbox is stopped for, nor the answer's slack behind it.
        assert took < 1.0 + sandboxes.GRACE + 3.0, took
        assert not sandbox.alive()
        resume.cancel()
    finally:
        sandbox.stop()
