"""FalkorDB: write attempts of several processes on the same providers
take turns (engine.exclusive holds a lock per stripe of their uuids: in a
file with fcntl through a unix socket, else in the server), and a lock its
holder never released cannot block anyone for long.  On Neo4j the
attempt's first statement takes row locks instead (test_processes races
two API processes on both engines)."""
import contextlib
import os
import subprocess
import sys
import threading
import time

import pytest

from tachyon_placement.graph import falkordb_engine
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is not None,
    reason='FalkorDB only: Neo4j locks rows in the statements')


@contextlib.contextmanager
def _pair(local_locks):
    """Two engines on one graph, as two API processes have, keeping their
    locks in a file (fcntl) or in the server."""
    name = 'locks_%d_%d' % (os.getpid(), time.monotonic_ns())
    socket_path = engines._embedded_socket()
    pair = [falkordb_engine.FalkorDBEngine(name, unix_socket_path=socket_path,
                                           local_locks=local_locks)
            for _ in range(2)]
    assert (pair[0]._stripe_file is not None) == local_locks
    try:
        yield pair
    finally:
        for engine in pair:
            engine.close()


@pytest.fixture(params=['file', 'server'])
def two_engines(request):
    with _pair(local_locks=request.param == 'file') as pair:
        yield pair


@pytest.fixture
def server_locked():
    with _pair(local_locks=False) as pair:
        yield pair


@pytest.fixture
def file_locked():
    with _pair(local_locks=True) as pair:
        yield pair


def _enter_later(engine, keys, entered):
    with engine.exclusive(keys):
        entered.append(time.monotonic())


def test_attempts_on_the_same_keys_take_turns(two_engines):
    first, second = two_engines
    entered = []
    with first.exclusive(['rp-1', 'consumer-a']):
        waiter = threading.Thread(target=_enter_later,
                                  args=(second, ['consumer-b', 'rp-1'],
                                        entered))
        waiter.start()
        time.sleep(0.3)
        assert entered == []          # still waiting for rp-1
        left = time.monotonic()
    waiter.join(5)
    assert entered and entered[0] >= left


def test_attempts_on_other_keys_do_not_wait(two_engines):
    first, second = two_engines
    entered = []
    with first.exclusive(['rp-1']):
        other = threading.Thread(target=_enter_later,
                                 args=(second, ['rp-2'], entered))
        other.start()
        other.join(5)
        assert entered  # entered while the first section is still open


def _stale_lock(engine, key, ttl_ms):
    """A lock as a killed holder leaves it."""
    name = '%s%d' % (engine._lock_prefix,
                     falkordb_engine.zlib.crc32(key.encode())
                     % falkordb_engine.LOCK_STRIPES)
    engine._db.connection.set(name, 'dead-holder', px=ttl_ms)


def test_a_dead_holders_lock_expires(server_locked):
    engine = server_locked[0]
    _stale_lock(engine, 'rp-1', ttl_ms=400)
    start = time.monotonic()
    with engine.exclusive(['rp-1']):
        waited = time.monotonic() - start
    assert 0.2 < waited < falkordb_engine.LOCK_WAIT


def test_a_lock_held_too_long_is_passed_by(server_locked, monkeypatch):
    monkeypatch.setattr(falkordb_engine, 'LOCK_WAIT', 0.3)
    engine = server_locked[0]
    _stale_lock(engine, 'rp-1', ttl_ms=60000)
    start = time.monotonic()
    with engine.exclusive(['rp-1']):
        waited = time.monotonic() - start
    # It goes on unlocked (the guarded write still checks generations).
    assert 0.3 <= waited < 2


_HOLDER = """
import sys, time
from tachyon_placement.graph import local_locks
stripes = local_locks.stripe_file(sys.argv[1], int(sys.argv[2]))
assert stripes.acquire([int(sys.argv[3])], time.monotonic() + 5)
print('held', flush=True)
time.sleep(60)
"""


def test_another_process_holds_the_file_lock_until_it_dies(file_locked,
                                                           monkeypatch):
    """A stripe another process holds is waited for (up to LOCK_WAIT, then
    passed by), and free the moment that process is killed."""
    monkeypatch.setattr(falkordb_engine, 'LOCK_WAIT', 0.3)
    engine = file_locked[0]
    stripe = (falkordb_engine.zlib.crc32(b'rp-1')
              % falkordb_engine.LOCK_STRIPES)
    holder = subprocess.Popen(
        [sys.executable, '-c', _HOLDER, engine._stripe_file.path,
         str(falkordb_engine.LOCK_STRIPES), str(stripe)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        start = time.monotonic()
        with engine.exclusive(['rp-1']):
            waited = time.monotonic() - start
        assert 0.3 <= waited < 2
        # Other stripes are free meanwhile.
        start = time.monotonic()
        with engine.exclusive(['rp-2']):
            assert time.monotonic() - start < 0.1
    finally:
        holder.kill()
        holder.wait()
    start = time.monotonic()
    with engine.exclusive(['rp-1']):
        assert time.monotonic() - start < 0.1
