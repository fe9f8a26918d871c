"""How much memory a process holds: what the sandboxes' watchdog kills on
and what the feed server reports and restarts by."""
import os


def resident_bytes(pid=None):
    """Resident bytes of process ``pid`` (this one when None); None when
    it is gone or this is no Linux (no /proc)."""
    path = '/proc/self/statm' if pid is None else '/proc/%d/statm' % pid
    try:
        with open(path, 'rb') as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf('SC_PAGE_SIZE')


def resident_mib(pid=None):
    """resident_bytes in whole MiB (None as there)."""
    found = resident_bytes(pid)
    return None if found is None else found // 2 ** 20
