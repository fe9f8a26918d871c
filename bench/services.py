"""Starting and stopping the two services and what they need.

* Placement: openstack-placement 16.0.0 from PyPI in its own venv
  (``bench/.work/placement-venv``), under gunicorn, on a private MariaDB
  server (Debian's ``mariadb-server``, installed if missing) with its own
  datadir and unix socket under ``bench/.work/mariadb`` and no TCP port.
* Tachyon: the venv that can import ``tachyon_placement`` (the harness's
  own interpreter when it can, else ``bench/.work/tachyon-venv`` with the
  repository installed editable), under gunicorn with the same worker
  count, embedded FalkorDB in a fresh ``[graph] data_dir``.

Both listen on 127.0.0.1 only, with ``[api] auth_strategy = noauth2``.

Every process started here is in its own session (so a Ctrl-C in the
terminal reaches only the harness, which then stops them in order) and is
recorded in ``bench/.work/pids/``; a later run kills whatever a crashed or
SIGKILLed run left behind.  ``Services.stop_all()`` is idempotent.
"""
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
WORK_DIR = os.path.join(BENCH_DIR, '.work')
PIDS_DIR = os.path.join(WORK_DIR, 'pids')
LOG_DIR = os.path.join(WORK_DIR, 'logs')
BENCH_REQUIREMENTS = os.path.join(BENCH_DIR, 'requirements.txt')
PLACEMENT_REQUIREMENTS = os.path.join(BENCH_DIR,
                                      'placement-requirements.txt')

PLACEMENT_APP = 'placement.wsgi.api:application'
TACHYON_APP = 'tachyon_placement.wsgi.api:application'


class SetupError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def tail(path, lines=25):
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            data = f.read().decode('utf-8', 'replace')
    except OSError:
        return '(no log at %s)' % path
    return '\n'.join(data.splitlines()[-lines:])


def run(argv, log_name, timeout=1800, env=None, cwd=None):
    """Run a setup command to completion, output to a log file."""
    os.makedirs(LOG_DIR, exist_ok=True)
    path = os.path.join(LOG_DIR, log_name)
    with open(path, 'ab') as out:
        out.write(('\n$ %s\n' % ' '.join(argv)).encode())
        out.flush()
        try:
            rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            raise SetupError('%s timed out after %ds (log %s)'
                             % (argv[0], timeout, path))
        except OSError as e:
            raise SetupError('cannot run %s: %s' % (argv[0], e))
    if rc != 0:
        raise SetupError('%s failed with status %d; %s ends with:\n%s'
                         % (' '.join(argv[:4]), rc, path, tail(path)))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _hash(*parts):
    h = hashlib.sha256()
    for p in parts:
        if os.path.exists(p):
            with open(p, 'rb') as f:
                h.update(f.read())
        else:
            h.update(p.encode())
    return h.hexdigest()


# -- processes ----------------------------------------------------------------

def proc_start_time(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            return f.read().rpartition(b')')[2].split()[19].decode()
    except (OSError, IndexError):
        return None


def pid_alive(pid, start_time=None):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            fields = f.read().rpartition(b')')[2].split()
    except OSError:
        return False
    if fields[0] in (b'Z', b'X'):
        return False
    return start_time is None or fields[19].decode() == start_time


def children(pid):
    """Direct children of pid."""
    kids = []
    try:
        for tid in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, tid)) as f:
                kids.extend(int(x) for x in f.read().split())
        return kids
    except OSError:
        pass
    for name in os.listdir('/proc'):     # no /proc/.../children
        if name.isdigit():
            try:
                with open('/proc/%s/stat' % name, 'rb') as f:
                    ppid = int(f.read().rpartition(b')')[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                kids.append(int(name))
    return kids


_TICKS = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid):
    """User + system CPU seconds a process has used (0 when gone)."""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            fields = f.read().rpartition(b')')[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_cpu_seconds():
    """(busy, total) CPU seconds of the machine since boot, all cores
    (/proc/stat: busy is everything but idle and iowait)."""
    with open('/proc/stat') as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    total = sum(ticks[:8])        # guest time is counted in user already
    return (total - ticks[3] - ticks[4]) / _TICKS, total / _TICKS


def rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def process_label(pid):
    """What a sampled process is, for the RSS peak's parts: its command
    name (java, redis-server, python...) and pid."""
    try:
        with open('/proc/%d/comm' % pid) as f:
            return '%s %d' % (f.read().strip(), pid)
    except OSError:
        return str(pid)


def wait_exit(pid, start_time, timeout, popen=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if popen is not None and popen.poll() is not None:
            return True
        if not pid_alive(pid, start_time):
            return True
        time.sleep(0.05)
    return False


def terminate(pid, start_time=None, popen=None, group=True, timeout=20.0):
    """SIGTERM pid (and its process group), then SIGKILL after timeout."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        if not pid_alive(pid, start_time):
            break
        try:
            if group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            if group:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        if wait_exit(pid, start_time, wait, popen):
            break
    if group:
        # Whatever is left in the group (workers of a killed master).
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            popen.wait(timeout=5)


class Proc:
    """A long-running process we started, recorded in PIDS_DIR."""

    def __init__(self, name, argv, env=None, cwd=None, log_name=None):
        os.makedirs(LOG_DIR, exist_ok=True)
        os.makedirs(PIDS_DIR, exist_ok=True)
        self.name = name
        self.log_path = os.path.join(LOG_DIR, log_name or name + '.log')
        with open(self.log_path, 'ab') as out:
            out.write(('\n$ %s\n' % ' '.join(argv)).encode())
            out.flush()
            try:
                self.popen = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, env=env, cwd=cwd,
                    start_new_session=True)
            except OSError as e:
                raise SetupError('cannot run %s: %s' % (argv[0], e))
        self.pid = self.popen.pid
        self.start_time = proc_start_time(self.pid)
        self._record = os.path.join(PIDS_DIR, '%s.pid' % name)
        with open(self._record, 'w') as f:
            f.write('%d %s\n' % (self.pid, self.start_time or ''))

    def alive(self):
        return self.popen.poll() is None

    def stop(self, timeout=20.0):
        terminate(self.pid, self.start_time, self.popen, timeout=timeout)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._record)


def reap_stale():
    """Kill what an earlier run that could not clean up left running."""
    if not os.path.isdir(PIDS_DIR):
        return
    for name in os.listdir(PIDS_DIR):
        path = os.path.join(PIDS_DIR, name)
        try:
            with open(path) as f:
                parts = f.read().split()
            pid, started = int(parts[0]), (parts[1] if len(parts) > 1
                                           else None)
        except (OSError, ValueError, IndexError):
            pid = None
        if pid and pid_alive(pid, started):
            log('killing %s (pid %d) left by an earlier run' % (name, pid))
            group = not name.startswith('detached-')
            terminate(pid, started, group=group, timeout=10)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


@contextlib.contextmanager
def work_dir_lock():
    """One benchmark at a time per work directory."""
    os.makedirs(WORK_DIR, exist_ok=True)
    fd = os.open(os.path.join(WORK_DIR, 'run.lock'),
                 os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError('another benchmark is running in %s' % WORK_DIR)
        yield
    finally:
        os.close(fd)


# -- installation -------------------------------------------------------------

_APT_UPDATED = False


def apt_install(*packages):
    global _APT_UPDATED
    if not shutil.which('apt-get'):
        raise SetupError('cannot install %s: no apt-get' % ' '.join(packages))
    if os.geteuid() == 0:
        root = ['env', 'DEBIAN_FRONTEND=noninteractive']
    elif shutil.which('sudo'):
        root = ['sudo', '-n', 'env', 'DEBIAN_FRONTEND=noninteractive']
    else:
        raise SetupError('installing %s needs root or sudo (or install it '
                         'first)' % ' '.join(packages))
    if not _APT_UPDATED:
        log('apt-get update')
        run(root + ['apt-get', 'update', '-qq'], 'apt.log')
        _APT_UPDATED = True
    # Debian's postinst would start the system-wide server: a policy-rc.d
    # that denies it (unless the machine has one already).
    policy = '/usr/sbin/policy-rc.d'
    created = False
    if not os.path.exists(policy):
        run(root + ['sh', '-c', 'printf "#!/bin/sh\\nexit 101\\n" > %s '
                    '&& chmod 755 %s' % (policy, policy)], 'apt.log')
        created = True
    try:
        log('apt-get install %s' % ' '.join(packages))
        run(root + ['apt-get', 'install', '-y', '-qq',
                    '--no-install-recommends'] + list(packages), 'apt.log')
    finally:
        if created:
            with contextlib.suppress(SetupError):
                run(root + ['rm', '-f', policy], 'apt.log')


def find_binary(*names):
    for name in names:
        for d in ('', '/usr/sbin/', '/usr/bin/', '/usr/local/sbin/'):
            path = shutil.which(d + name) if d else shutil.which(name)
            if path:
                return path
    return None


def mariadb_binaries():
    """(server, install_db, client) paths; installs mariadb-server if
    needed."""
    def find():
        return (find_binary('mariadbd', 'mysqld'),
                find_binary('mariadb-install-db', 'mysql_install_db'),
                find_binary('mariadb', 'mysql'))
    found = find()
    if not all(found):
        apt_install('mariadb-server', 'mariadb-client')
        found = find()
        if not all(found):
            raise SetupError('mariadb-server is installed but its binaries '
                             'are not found: %s' % (found,))
    return found


def _venv_python(venv):
    return os.path.join(venv, 'bin', 'python')


def _pip_env():
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK='1',
               SKIP_GENERATE_AUTHORS='1', SKIP_WRITE_GIT_CHANGELOG='1')
    if not os.path.isdir(os.path.join(REPO_DIR, '.git')):
        env.setdefault('PBR_VERSION', '0.0.0')
    return env


def ensure_venv(venv, pip_args, stamp_inputs, base_python, log_name):
    """A venv at ``venv`` with ``pip install pip_args`` done, redone when
    the stamp inputs (requirement files...) change."""
    python = _venv_python(venv)
    stamp_path = os.path.join(venv, '.bench-stamp')
    stamp = _hash(*stamp_inputs, ' '.join(pip_args))
    if os.path.exists(python):
        with contextlib.suppress(OSError):
            with open(stamp_path) as f:
                if f.read().strip() == stamp:
                    return python
    if not os.path.exists(python):
        log('creating %s' % venv)
        run([base_python, '-m', 'venv', venv], log_name)
    log('installing %s into %s (log %s)' % (
        ' '.join(pip_args), os.path.relpath(venv, REPO_DIR),
        os.path.join(LOG_DIR, log_name)))
    run([python, '-m', 'pip', 'install', '-q'] + pip_args, log_name,
        env=_pip_env())
    with open(stamp_path, 'w') as f:
        f.write(stamp + '\n')
    return python


def _can_import(python, *modules):
    code = 'import %s' % ', '.join(modules)
    return subprocess.run([python, '-c', code], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL,
                          cwd=WORK_DIR).returncode == 0


def placement_python(base_python):
    venv = os.path.join(WORK_DIR, 'placement-venv')
    return ensure_venv(venv, ['-r', PLACEMENT_REQUIREMENTS],
                       [PLACEMENT_REQUIREMENTS, BENCH_REQUIREMENTS],
                       base_python, 'placement-pip.log')


def tachyon_python(requested=None):
    """An interpreter that can import tachyon_placement and gunicorn."""
    os.makedirs(WORK_DIR, exist_ok=True)
    python = requested or sys.executable
    if _can_import(python, 'tachyon_placement'):
        if not _can_import(python, 'gunicorn', 'prometheus_client'):
            log('installing bench/requirements.txt into %s' % python)
            run([python, '-m', 'pip', 'install', '-q', '-r',
                 BENCH_REQUIREMENTS], 'tachyon-pip.log', env=_pip_env())
        return python
    if requested:
        raise SetupError('%s cannot import tachyon_placement' % requested)
    venv = os.path.join(WORK_DIR, 'tachyon-venv')
    return ensure_venv(
        venv, ['-r', os.path.join(REPO_DIR, 'requirements.txt'),
               '-r', BENCH_REQUIREMENTS, '-e', REPO_DIR],
        [os.path.join(REPO_DIR, 'requirements.txt'), BENCH_REQUIREMENTS,
         os.path.join(REPO_DIR, 'setup.cfg')],
        sys.executable, 'tachyon-pip.log')


def pip_freeze(python):
    try:
        out = subprocess.run([python, '-m', 'pip', 'freeze'],
                             capture_output=True, text=True, timeout=120,
                             cwd=WORK_DIR)
        return out.stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return []


# -- config files -------------------------------------------------------------

def write_conf(path, sections):
    """sections: {section: {key: value}} -> an ini file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        for section, opts in sections.items():
            f.write('[%s]\n' % section)
            for k, v in opts.items():
                f.write('%s = %s\n' % (k, v))
            f.write('\n')


def merge_conf(base, overrides):
    """overrides: ['section.key=value', ...] applied to both services."""
    for item in overrides or ():
        key, _, value = item.partition('=')
        section, _, name = key.partition('.')
        if not (section and name and _):
            raise SetupError('--conf wants SECTION.KEY=VALUE, not %r' % item)
        base.setdefault(section, {})[name] = value
    return base


# -- services -----------------------------------------------------------------

class MariaDB:
    def __init__(self, buffer_pool='256M'):
        self.dir = os.path.join(WORK_DIR, 'mariadb')
        self.datadir = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.buffer_pool = buffer_pool
        self.proc = None
        self.version = None

    def start(self):
        server, install_db, client = mariadb_binaries()
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        user = ['--user=root'] if os.geteuid() == 0 else []
        run([install_db, '--no-defaults', '--datadir=' + self.datadir,
             '--auth-root-authentication-method=normal', '--skip-test-db',
             '--skip-name-resolve'] + user, 'mariadb-install.log',
            timeout=300)
        self.proc = Proc('mariadbd', [
            server, '--no-defaults', '--datadir=' + self.datadir,
            '--socket=' + self.socket, '--skip-networking',
            '--pid-file=' + os.path.join(self.dir, 'mariadbd.pid'),
            '--log-error=' + os.path.join(LOG_DIR, 'mariadbd-error.log'),
            '--innodb-buffer-pool-size=' + self.buffer_pool,
            '--max-connections=1000', '--character-set-server=utf8mb4',
            '--collation-server=utf8mb4_general_ci', '--skip-name-resolve',
        ] + user)
        deadline = time.monotonic() + 120
        while True:
            try:
                subprocess.run(
                    [client, '--no-defaults', '--socket=' + self.socket,
                     '-uroot', '-e', 'SELECT 1'], check=True,
                    stdin=subprocess.DEVNULL, capture_output=True,
                    timeout=10)
                break
            except (subprocess.CalledProcessError,
                    subprocess.TimeoutExpired):
                if not self.proc.alive() or time.monotonic() > deadline:
                    raise SetupError(
                        'MariaDB did not start; log ends with:\n%s'
                        % tail(os.path.join(LOG_DIR, 'mariadbd-error.log')))
                time.sleep(0.2)
        out = subprocess.run(
            [client, '--no-defaults', '--socket=' + self.socket, '-uroot',
             '-N', '-e', 'CREATE DATABASE placement; SELECT VERSION()'],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=30)
        if out.returncode != 0:
            raise SetupError('CREATE DATABASE failed: %s' % out.stderr)
        self.version = out.stdout.strip()

    @property
    def url(self):
        return ('mysql+pymysql://root@localhost/placement?unix_socket=%s'
                '&charset=utf8mb4' % self.socket)

    def pids(self):
        if self.proc and self.proc.alive():
            return [self.proc.pid]
        return []

    def stop(self):
        if self.proc:
            self.proc.stop(timeout=60)
            self.proc = None


class Gunicorn:
    """gunicorn serving one WSGI callable on 127.0.0.1."""

    def __init__(self, name, python, app, workers, threads, env, cwd):
        self.name = name
        self.python = python
        self.app = app
        self.workers = workers
        self.threads = threads
        self.env = env
        self.cwd = cwd
        self.port = None
        self.proc = None

    def argv(self):
        return [self.python, '-m', 'gunicorn',
                '--workers', str(self.workers),
                '--threads', str(self.threads),
                '--worker-class', 'gthread',
                '--bind', '127.0.0.1:%d' % self.port,
                '--backlog', '2048',
                '--timeout', '900', '--graceful-timeout', '10',
                '--keep-alive', '60',
                '--worker-tmp-dir', '/dev/shm',
                '--log-level', 'warning',
                self.app]

    def start(self, timeout=180):
        self.port = free_port()
        os.makedirs(self.cwd, exist_ok=True)
        self.proc = Proc(self.name, self.argv(), env=self.env, cwd=self.cwd)
        deadline = time.monotonic() + timeout
        url = 'http://127.0.0.1:%d/' % self.port
        while True:
            if not self.proc.alive():
                raise SetupError('%s exited at start; %s ends with:\n%s'
                                 % (self.name, self.proc.log_path,
                                    tail(self.proc.log_path)))
            try:
                with urllib.request.urlopen(url, timeout=30) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SetupError('%s does not answer on %s after %ds; log:\n%s'
                                 % (self.name, url, timeout,
                                    tail(self.proc.log_path)))
            time.sleep(0.25)

    def pids(self):
        if not (self.proc and self.proc.alive()):
            return []
        return [self.proc.pid] + children(self.proc.pid)

    def stop(self):
        if self.proc:
            self.proc.stop(timeout=30)
            self.proc = None


class Service:
    """Base: a named service with its gunicorn and database processes."""

    name = None
    label = None

    def __init__(self):
        self.gunicorn = None

    @property
    def port(self):
        return self.gunicorn.port

    def pids(self):
        return self.gunicorn.pids() if self.gunicorn else []

    def describe(self):
        return {}


class PlacementService(Service):
    name = 'placement'
    label = 'Placement'

    def __init__(self, python, workers, threads, conf_overrides=(),
                 buffer_pool='256M'):
        super().__init__()
        self.python = python
        self.dir = os.path.join(WORK_DIR, 'placement')
        self.db = MariaDB(buffer_pool)
        self.workers, self.threads = workers, threads
        self.conf_overrides = conf_overrides

    def start(self):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        log('placement: starting MariaDB')
        self.db.start()
        conf_path = os.path.join(self.dir, 'etc', 'placement.conf')
        write_conf(conf_path, merge_conf({
            'DEFAULT': {'debug': 'False'},
            'api': {'auth_strategy': 'noauth2'},
            'placement_database': {'connection': self.db.url},
        }, self.conf_overrides))
        log('placement: placement-manage db sync')
        bindir = os.path.dirname(self.python)
        run([os.path.join(bindir, 'placement-manage'), '--config-file',
             conf_path, 'db', 'sync'], 'placement-db-sync.log', timeout=600,
            cwd=WORK_DIR)
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=os.path.dirname(
            conf_path), PYTHONDONTWRITEBYTECODE='1')
        env.pop('TACHYON_CONFIG_FILE', None)
        self.gunicorn = Gunicorn('placement-gunicorn', self.python,
                                 PLACEMENT_APP, self.workers, self.threads,
                                 env, self.dir)
        log('placement: starting gunicorn')
        self.gunicorn.start()

    def pids(self):
        return super().pids() + self.db.pids()

    def stop(self):
        if self.gunicorn:
            self.gunicorn.stop()
        self.db.stop()

    def describe(self):
        return {'app': PLACEMENT_APP, 'database': 'MariaDB %s'
                % self.db.version, 'innodb_buffer_pool_size':
                self.db.buffer_pool}


class Neo4jServer:
    """A Neo4j Community server of the bench's own, in a fresh directory,
    run by tools/neo4j-server.sh (a JVM built with Maven)."""

    SCRIPT = os.path.join(REPO_DIR, 'tools', 'neo4j-server.sh')

    def __init__(self, heap, pagecache):
        self.dir = os.path.join(WORK_DIR, 'neo4j')
        self.heap, self.pagecache = heap, pagecache
        self.env = dict(os.environ, TACHYON_NEO4J_DIR=self.dir,
                        TACHYON_NEO4J_HEAP=heap,
                        TACHYON_NEO4J_PAGECACHE=pagecache,
                        TACHYON_NEO4J_PORT=str(free_port()))
        self.uri = None

    def _script(self, command, timeout=900):
        done = subprocess.run([self.SCRIPT, command], env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode:
            raise SetupError('neo4j-server.sh %s failed:\n%s' % (
                command, done.stderr[-3000:]))
        return done.stdout.strip()

    def start(self):
        self._script('stop')
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        log('neo4j: starting (tools/neo4j-server.sh)')
        self.uri = self._script('start')

    def pid(self):
        try:
            return int(self._script('pid'))
        except (SetupError, ValueError):
            return None

    def stop(self):
        self._script('stop', timeout=120)


# Deletes everything in the Neo4j database named by argv[1], in batches
# (run with Tachyon's interpreter, which has the driver).
_EMPTY_NEO4J = '''
import sys
import neo4j
with neo4j.GraphDatabase.driver(sys.argv[1]) as driver:
    while driver.execute_query(
            'MATCH (n) WITH n LIMIT 20000 DETACH DELETE n '
            'RETURN count(*) AS deleted').records[0]['deleted']:
        pass
'''


class TachyonService(Service):
    name = 'tachyon'
    label = 'Tachyon'

    def __init__(self, python, workers, threads, conf_overrides=(),
                 engine='falkordb', neo4j_heap='2g',
                 neo4j_pagecache='512m'):
        """``engine``: ``falkordb`` (embedded) or ``neo4j`` (a server of
        the bench's own, see Neo4jServer)."""
        super().__init__()
        self.python = python
        self.dir = os.path.join(WORK_DIR, 'tachyon')
        self.data_dir = os.path.join(self.dir, 'graph')
        self.workers, self.threads = workers, threads
        self.conf_overrides = conf_overrides
        self.engine = engine
        self.neo4j = (Neo4jServer(neo4j_heap, neo4j_pagecache)
                      if engine == 'neo4j' else None)
        if self.neo4j:
            self.label = 'Tachyon (Neo4j)'
        self._server_record = os.path.join(PIDS_DIR,
                                           'detached-falkordb.pid')

    def start(self):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        graph = {'data_dir': self.data_dir}
        if self.neo4j:
            self.neo4j.start()
            graph['connection'] = self.neo4j.uri
        conf_path = self.conf_path = os.path.join(
            self.dir, 'etc', 'placement.conf')
        write_conf(conf_path, merge_conf({
            'DEFAULT': {'debug': 'False'},
            'api': {'auth_strategy': 'noauth2'},
            'graph': graph,
        }, self.conf_overrides))
        log('tachyon: tachyon-manage db sync')
        run([self.python, '-m', 'tachyon_placement.cmd.manage',
             '--config-file', conf_path, 'db', 'sync'],
            'tachyon-db-sync.log', timeout=600, cwd=WORK_DIR)
        env = dict(os.environ, TACHYON_CONFIG_FILE=conf_path,
                   PYTHONDONTWRITEBYTECODE='1')
        env.pop('OS_PLACEMENT_CONFIG_DIR', None)
        self.gunicorn = Gunicorn('tachyon-gunicorn', self.python,
                                 TACHYON_APP, self.workers, self.threads,
                                 env, self.dir)
        log('tachyon: starting gunicorn')
        self.gunicorn.start()
        self._record_server()

    def restart_empty(self):
        """Neo4j only: stop gunicorn, empty the database, sync the schema
        again and start gunicorn anew (fresh in-memory copies of the
        graph), keeping the JVM and so the code its JIT compiled."""
        self.gunicorn.stop()
        run([self.python, '-c', _EMPTY_NEO4J, self.neo4j.uri],
            'tachyon-empty.log', timeout=600, cwd=WORK_DIR)
        log('tachyon: tachyon-manage db sync')
        run([self.python, '-m', 'tachyon_placement.cmd.manage',
             '--config-file', self.conf_path, 'db', 'sync'],
            'tachyon-db-sync.log', timeout=600, cwd=WORK_DIR)
        self.gunicorn.start()

    def server_pid(self):
        """The database: the Neo4j JVM, or the embedded FalkorDB server
        (started detached by a worker)."""
        if self.neo4j:
            return self.neo4j.pid()
        try:
            with open(os.path.join(self.data_dir, 'server.pid')) as f:
                parts = f.read().split()
            pid, started = int(parts[0]), (parts[1] if len(parts) > 1
                                           else None)
        except (OSError, ValueError, IndexError):
            return None
        return pid if pid_alive(pid, started) else None

    def _record_server(self):
        pid = None if self.neo4j else self.server_pid()
        if pid:
            os.makedirs(PIDS_DIR, exist_ok=True)
            with open(self._server_record, 'w') as f:
                f.write('%d %s\n' % (pid, proc_start_time(pid) or ''))

    def pids(self):
        pid = self.server_pid()
        return super().pids() + ([pid] if pid else [])

    def stop(self):
        pid = None if self.neo4j else self.server_pid()
        started = proc_start_time(pid) if pid else None
        if self.gunicorn:
            self.gunicorn.stop()
        # The last worker to exit shuts the server down; if the workers
        # were killed, it is still there.
        if pid and pid_alive(pid, started):
            if wait_exit(pid, started, 5.0):
                pass
            else:
                log('tachyon: stopping the embedded FalkorDB (pid %d)' % pid)
                terminate(pid, started, group=False, timeout=30)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._server_record)
        if self.neo4j:
            self.neo4j.stop()

    def describe(self):
        if self.neo4j:
            return {'app': TACHYON_APP, 'database': 'Neo4j Community (%s)'
                    % self.neo4j.uri, 'neo4j_heap': self.neo4j.heap,
                    'neo4j_pagecache': self.neo4j.pagecache}
        return {'app': TACHYON_APP, 'database': 'embedded FalkorDB',
                'data_dir': self.data_dir}


class RssSampler(threading.Thread):
    """Samples the summed RSS of each service's processes; keeps the peak
    per phase label and overall.  Also notes, at the start of each phase,
    the CPU its processes and the machine have used, for the CPU spent in
    the phase so far (cpu_used): throughput on a shared machine moves with
    the hour, CPU per request much less."""

    def __init__(self, services, interval=0.2):
        super().__init__(name='rss-sampler', daemon=True)
        self.services = services
        self.interval = interval
        self.phase = 'start'
        self.peaks = {}         # (service name, phase) -> KiB
        self.peak = {}          # service name -> KiB
        # service name -> (phase, {process label: KiB}) at its peak: which
        # process (engine, gunicorn worker) made it
        self.peak_parts = {}
        # phase -> ({service name: its CPU seconds}, the machine's
        # (busy, total) CPU seconds) when the phase started
        self.cpu_at_start = {}
        self._stop_event = threading.Event()
        self._lock = threading.Lock()

    def set_phase(self, phase):
        self.sample()           # the end of the previous phase
        with self._lock:
            self.phase = phase
            self.cpu_at_start[phase] = (self._service_cpu(),
                                        machine_cpu_seconds())
        self.sample()

    def _service_cpu(self):
        return {svc.name: sum(map(cpu_seconds, svc.pids()))
                for svc in self.services}

    def cpu_used(self, phase):
        """({service name: CPU seconds its processes used}, the fraction
        of the machine's CPU in use) from the start of ``phase`` to now;
        None before it started."""
        with self._lock:
            started = self.cpu_at_start.get(phase)
        if started is None:
            return None
        services, (busy, total) = started
        now_busy, now_total = machine_cpu_seconds()
        used = {name: round(seconds - services.get(name, 0.0), 2)
                for name, seconds in self._service_cpu().items()}
        # (min: the busy and total seconds are sums of floats, and a
        # machine busy throughout came out a hair above 1.)
        share = min(1.0, (now_busy - busy) / (now_total - total)) if (
            now_total > total) else None
        return used, share

    def sample(self):
        for svc in self.services:
            parts = {pid: rss_kib(pid) for pid in svc.pids()}
            total = sum(parts.values())
            with self._lock:
                key = (svc.name, self.phase)
                if total > self.peaks.get(key, 0):
                    self.peaks[key] = total
                if total > self.peak.get(svc.name, 0):
                    self.peak[svc.name] = total
                    self.peak_parts[svc.name] = (self.phase, parts)

    def run(self):
        while not self._stop_event.wait(self.interval):
            try:
                self.sample()
            except Exception as e:    # never kill the benchmark
                log('rss sampler: %s' % e)

    def stop(self):
        self._stop_event.set()

    def peak_parts_mib(self, service):
        """{'phase': phase, 'processes': {label: MiB}} at the service's
        peak over the run, or None."""
        with self._lock:
            found = self.peak_parts.get(service)
        if not found:
            return None
        phase, parts = found
        return {'phase': phase,
                'processes': {process_label(pid): round(kib / 1024.0, 1)
                              for pid, kib in parts.items()}}

    def peak_mib(self, service, phase=None):
        with self._lock:
            kib = (self.peak.get(service) if phase is None
                   else self.peaks.get((service, phase)))
        return round(kib / 1024.0, 1) if kib else None
