"""Write locks of the processes of one machine: byte-range locks on a file.

The embedded FalkorDB server is reached through a unix socket, so every
API process writing to it runs on the same machine.  Their write attempts
take turns on stripes of the providers and consumers they touch (see
falkordb_engine.py) through the kernel rather than through the server:
a stripe is one byte of a file beside the socket, locked with fcntl.
Taking and releasing a stripe is a system call each, where the server's
locks (``SET NX`` in a script) were two round trips per write attempt,
waited for by polling the server; and the kernel drops the locks of a
process that dies, so none outlives its holder.

fcntl locks belong to a process, not to a thread: threads of one process
first take the stripe's threading lock, shared by every engine of the
process on that file.
"""
import errno
import fcntl
import os
import threading
import time

# Longest pause between two tries of a stripe another process holds (the
# first is a tenth of a millisecond: a write attempt holds its stripes for
# a few milliseconds).
_LONGEST_PAUSE = 0.002


class StripeFile:
    """``stripes`` locks of the processes of a machine, on ``path``."""

    def __init__(self, path, stripes):
        self.path = path
        self._stripes = stripes
        self._guard = threading.Lock()
        self._pid = None
        self._fd = None
        self._locks = None

    def _opened(self):
        """(file descriptor, threading locks) of this process: a forked
        child holds none of its parent's fcntl locks, and opens its own."""
        pid = os.getpid()
        if self._pid != pid:
            with self._guard:
                if self._pid != pid:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT,
                                       0o600)
                    self._locks = [threading.Lock()
                                   for _ in range(self._stripes)]
                    self._pid = pid
        return self._fd, self._locks

    def check(self):
        """Open the file now (OSError when it cannot be)."""
        self._opened()

    def acquire(self, stripes, deadline):
        """Take ``stripes`` (sorted stripe numbers) in order; those taken
        before ``deadline`` (time.monotonic()) passed, as a list."""
        fd, locks = self._opened()
        held = []
        try:
            for stripe in stripes:
                wait = deadline - time.monotonic()
                if wait <= 0 or not locks[stripe].acquire(timeout=wait):
                    break
                if not _lock_byte(fd, stripe, deadline):
                    locks[stripe].release()
                    break
                held.append(stripe)
        except BaseException:
            self.release(held)
            raise
        return held

    def release(self, held):
        fd, locks = self._opened()
        for stripe in reversed(held):
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, stripe)
            locks[stripe].release()


def _lock_byte(fd, offset, deadline):
    pause = 0.0001
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            # Held by another process.
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)


_FILES = {}
_FILES_LOCK = threading.Lock()


def stripe_file(path, stripes):
    """The process's StripeFile on ``path`` (every engine of the process
    shares it: their threads exclude each other through its threading
    locks)."""
    with _FILES_LOCK:
        found = _FILES.get(path)
        if found is None:
            found = _FILES[path] = StripeFile(path, stripes)
        return found
