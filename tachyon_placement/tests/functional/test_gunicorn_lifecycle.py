"""Stopping a gunicorn deployment stops the embedded FalkorDB server its
workers started, also when a worker had to be killed (a hung one, past
gunicorn's graceful timeout, cannot let the engine go itself)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import served


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as stat:
        return stat.read().rpartition(')')[2].split()[0] != 'Z'


def _workers(master):
    children = '/proc/%d/task/%d/children' % (master, master)
    with open(children) as found:
        return [int(pid) for pid in found.read().split()]


def test_a_stopped_server_stops_its_engine_despite_a_killed_worker(
        tmp_path):
    if engines.NEO4J_URI:
        pytest.skip('Neo4j runs apart from the API: there is no embedded '
                    'engine for gunicorn to stop')
    api = served.ServedGunicorn(
        tmp_path, workers=2,
        env={'GUNICORN_CMD_ARGS': '--graceful-timeout 3'})
    api.start()
    process = api.process
    try:
        # Every worker starts using the engine (its first request).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, _body = api.request('GET', '/resource_providers')
            assert status == 200
            workers = _workers(process.pid)
            registered = os.listdir(os.path.join(api.config.data_dir,
                                                 'clients'))
            if len(workers) == 2 and {
                    str(pid) for pid in workers} <= set(registered):
                break
        assert len(workers) == 2, workers
        engine = api.config.engine_pid()
        assert _alive(engine)
        # One worker hangs; gunicorn is told to stop (as systemd does).
        os.kill(workers[0], signal.SIGSTOP)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert not _alive(workers[0]), 'gunicorn left its hung worker'
    deadline = time.monotonic() + 30
    while _alive(engine) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(engine), api.log_tail()
    assert 'Stopped the embedded FalkorDB server' in api.log_tail()
    # And the next start of the service finds its data.
    restarted = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.status',
         '--config-file', api.config.config, 'upgrade', 'check'],
        capture_output=True, text=True, timeout=120)
    assert restarted.returncode == 0, restarted.stdout
