"""Cap glibc's malloc arenas in a threaded API worker.

glibc gives each new thread an arena of its own, up to eight per core,
and memory freed in an arena mostly stays with the process: an arena
returns only the free pages at its top. A worker of 4 threads answering
large lists at once builds their transient objects in 4 arenas, and each
keeps the high-water mark of what its thread once held. Two arenas let
those threads reuse each other's freed memory: the bench's warm-up at
10,000 hosts peaked at 865 MiB instead of 942 (service and engine), the
latencies alike (the interpreter lock serialises most allocations
anyway); at 50,000 hosts on Neo4j 4213 instead of 4268 (what the workers
keep there is mostly live objects). The same cap an operator sets with
``MALLOC_ARENA_MAX``, which is left to rule when set.
"""
import ctypes
import ctypes.util
import os

# mallopt's parameter number for the arena cap (glibc's malloc.h).
M_ARENA_MAX = -8
ARENAS = 2


def _libc(function, argtypes):
    """The C library's ``function`` (None where it has none: musl,
    macOS)."""
    name = ctypes.util.find_library('c')
    if not name:
        return None
    try:
        found = getattr(ctypes.CDLL(name), function)
    except (OSError, AttributeError):
        return None
    found.argtypes = argtypes
    found.restype = ctypes.c_int
    return found


def cap(environ=os.environ, arenas=ARENAS):
    """Set the cap for this process unless the environment sets one; a
    C library without mallopt (musl, macOS) is left as it is. True when
    the cap was set here."""
    if environ.get('MALLOC_ARENA_MAX'):
        return False
    mallopt = _libc('mallopt', (ctypes.c_int, ctypes.c_int))
    return mallopt is not None and mallopt(M_ARENA_MAX, arenas) == 1


def trim():
    """Give the C library's free memory back to the system (glibc's
    malloc_trim: free pages in every arena, not only at a heap's top);
    False where there is no malloc_trim."""
    malloc_trim = _libc('malloc_trim', (ctypes.c_size_t,))
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True
