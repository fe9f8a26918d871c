"""bench/'s RSS peak says which process made it (the engine, a gunicorn
worker): a peak over a limit is otherwise a sum nobody can act on."""
import os
import subprocess
import sys
import time
import types

from bench import report
from bench import services


def test_the_peak_keeps_each_process_share_and_its_phase():
    child = subprocess.Popen(
        [sys.executable, '-c',
         'import sys; b = b"x" * (64 << 20); sys.stdin.read()'],
        stdin=subprocess.PIPE)
    try:
        pids = [os.getpid()]
        me = types.SimpleNamespace(name='tachyon', pids=lambda: list(pids))
        sampler = services.RssSampler([me])
        sampler.set_phase('load')
        alone = sampler.peak_parts_mib('tachyon')
        assert list(alone['processes']) == [
            services.process_label(os.getpid())]
        # The child holds 64 MiB written once it waits on its stdin.
        deadline = time.monotonic() + 30
        while services.rss_kib(child.pid) < 64 << 10:
            assert time.monotonic() < deadline, 'the child never grew'
            time.sleep(0.01)
        sampler.set_phase('warm-up')
        pids.append(child.pid)
        sampler.sample()
        parts = sampler.peak_parts_mib('tachyon')
        assert parts['phase'] == 'warm-up'
        child_label = services.process_label(child.pid)
        assert child_label.endswith(' %d' % child.pid)
        assert parts['processes'][child_label] >= 64
        # (Each part is rounded to 0.1 MiB.)
        assert abs(sum(parts['processes'].values())
                   - sampler.peak_mib('tachyon')) <= 0.2
        # A smaller sample later leaves the peak's parts as they were.
        pids.remove(child.pid)
        sampler.set_phase('sched')
        assert sampler.peak_parts_mib('tachyon') == parts
    finally:
        child.communicate(b'')
    assert services.RssSampler([me]).peak_parts_mib('tachyon') is None


def test_the_report_names_the_processes_at_the_peak():
    results = {'services': {'tachyon': {
        'label': 'Tachyon (Neo4j)', 'rss_peak_mib': 4386.1,
        'rss_peak_parts': {'phase': 'warm-up', 'processes': {
            'python 11': 1200.0, 'java 9': 2900.0, 'python 10': 286.1}}}}}
    lines = report._memory_lines(results, {'tachyon': 'Tachyon (Neo4j)'})
    assert lines == [
        'RSS peak over the run (service and engine): Tachyon (Neo4j) '
        '4386 MiB',
        '  Tachyon (Neo4j) at its peak (warm-up): java 9 2900 MiB, '
        'python 11 1200 MiB, python 10 286 MiB']
