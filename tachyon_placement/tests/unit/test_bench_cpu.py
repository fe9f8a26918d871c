"""bench/'s CPU accounting of a phase: a service's processes' CPU per
claim and how busy the machine was (throughput on a shared machine moves
with the hour; CPU per claim much less)."""
import os
import time
import types

from bench import __main__ as bench_main
from bench import services


def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        sum(range(1000))


def test_a_phase_counts_the_cpu_its_service_used_and_the_machine_share():
    me = types.SimpleNamespace(name='tachyon', pids=lambda: [os.getpid()])
    gone = types.SimpleNamespace(name='placement', pids=lambda: [])
    sampler = services.RssSampler([me, gone])
    assert sampler.cpu_used('sched_c1') is None
    sampler.set_phase('sched_c1')
    _burn(0.3)
    used, share = sampler.cpu_used('sched_c1')
    assert 0.25 <= used['tachyon'] < 5
    assert used['placement'] == 0
    assert 0 < share <= 1
    entry = {'tachyon': {}, 'placement': {}}
    stats = {'tachyon': types.SimpleNamespace(claims=100),
             'placement': types.SimpleNamespace(claims=0)}
    bench_main._note_cpu(entry, stats, (used, share))
    assert entry['tachyon']['cpu_ms_per_claim'] == round(
        1000.0 * used['tachyon'] / 100, 2)
    assert 'cpu_ms_per_claim' not in entry['placement']     # no claim
    assert entry['machine_busy_percent'] == round(100.0 * share, 1)
