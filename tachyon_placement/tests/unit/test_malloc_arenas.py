"""The API worker caps glibc's malloc arenas (wsgi/malloc_arenas.py).

Each case runs in a fresh interpreter: the cap is process-wide and only
applies to arenas made after it. Eight threads each take memory from
malloc (bytes over pymalloc's 512-byte limit) while all are alive, which
gives each its own arena unless capped; glibc's malloc_info then lists
the arenas (``<heap nr=...>``).
"""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != 'Linux' or platform.libc_ver()[0] != 'glibc',
    reason='malloc arenas and malloc_info are glibc\'s: %s %s' % (
        platform.system(), platform.libc_ver()[0] or 'no glibc'))

_THREADS = textwrap.dedent('''
    import ctypes, ctypes.util, os, re, tempfile, threading
    {setup}
    barrier = threading.Barrier(8)
    held = []
    def take():
        held.append([bytes(2000) for _ in range(2000)])
        barrier.wait()
    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc = ctypes.CDLL(ctypes.util.find_library('c'))
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)
    path = tempfile.mktemp()
    stream = libc.fopen(path.encode(), b'w')
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    with open(path) as info:
        print(len(re.findall('<heap nr=', info.read())))
    os.unlink(path)
''')


def _arenas(setup, **environ):
    env = dict(os.environ)
    env.pop('MALLOC_ARENA_MAX', None)
    env.update(environ)
    done = subprocess.run(
        [sys.executable, '-c', _THREADS.format(setup=setup)], env=env,
        capture_output=True, text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


def test_uncapped_threads_take_an_arena_each():
    # What the cap is for (and proof the count below can fail).
    assert _arenas('') > 4


def test_cap_leaves_two_arenas():
    assert _arenas('from tachyon_placement.wsgi import malloc_arenas\n'
                   'assert malloc_arenas.cap() is True') <= 2


def test_wsgi_entry_point_caps_on_import():
    assert _arenas('import tachyon_placement.wsgi.api') <= 2


def test_operator_setting_rules():
    assert _arenas('from tachyon_placement.wsgi import malloc_arenas\n'
                   'assert malloc_arenas.cap() is False',
                   MALLOC_ARENA_MAX='6') > 2


_TRIMMED = textwrap.dedent('''
    import threading
    from tachyon_placement.wsgi import malloc_arenas

    def rss_kib():
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])

    # Memory taken and freed in threads' arenas (what a crowd of
    # subscribers' reads leaves), with a little kept at each arena's top:
    # glibc returns only a heap's top by itself.
    kept = []

    def take():
        taken = [bytes(2000) for _ in range(20000)]
        kept.append(bytes(2000))
        del taken
    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    before = rss_kib()
    assert malloc_arenas.trim()
    print(before, rss_kib())
''')


def test_trim_gives_freed_memory_back():
    done = subprocess.run(
        [sys.executable, '-c', _TRIMMED], capture_output=True, text=True,
        timeout=120, check=True)
    before, after = map(int, done.stdout.split())
    # 4 threads freed about 160 MB between them.
    assert before - after > 50 * 1024, (before, after)
