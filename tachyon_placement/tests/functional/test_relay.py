"""The replication relay (processes/relay.py) is a gate any
local user can reach: a sandbox replica of the embedded FalkorDB server
(the feed's reads, scorers, db backup) replicates through a loopback TCP
port of the API's process, which then reaches the server's 0700 socket.

Found by a review as uid nobody: the sandbox's secret on its command line
(``--masterauth``, caught in /proc/*/cmdline in 4 of ~12 starts), the same
secret for the relay's life, then every command forwarded (GRAPH.QUERY
``CREATE (:Intruder)``, CONFIG GET dir), PING without AUTH, and a thread
per connection (57 held connections, 57 threads).  Here: the secret is
never on a command line (polled through sandbox restarts), nothing passes
before AUTH, after it only replication commands, and the relay's threads
are bounded whatever is held open."""
import os
import signal
import socket
import threading
import time

import pytest

from tachyon_placement import processes
from tachyon_placement.graph import replica_reads
from tachyon_placement.processes import relay as relays
from tachyon_placement.processes import replicas
from tachyon_placement.tests.functional.fixtures import engine as engines

pytestmark = pytest.mark.skipif(
    engines.NEO4J_URI is not None,
    reason='FalkorDB only: the relay lets a sandbox replicate the embedded '
           'FalkorDB server; Neo4j is copied, never replicated')

command = relays.resp_command


@pytest.fixture
def primary(seeded_primary):
    return seeded_primary


@pytest.fixture
def replica(primary):
    made = replicas.Replica(
        primary.connect_raw, primary.graph_name, replica_reads.BOUNDS,
        watch_memory=False)
    try:
        made.running()
    except processes.SandboxError as exc:
        # Both sides of the replication that did not happen.
        raise AssertionError('%s; the graph server\'s log: %s' % (
            exc, engines.embedded_log_tail())) from exc
    yield made
    made.close()


def _cmdlines():
    """Every process's command line (those this user can read)."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/cmdline' % entry, 'rb') as cmdline:
                    found.append(cmdline.read())
            except OSError:
                pass
    return found


def _talk(port, *commands, read=True):
    """What the relay answers ``commands`` sent one by one on one
    connection (b'' once it closed the connection)."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=10)
    answers = []
    try:
        for sent in commands:
            try:
                sock.sendall(sent)
                answers.append(sock.recv(4096) if read else None)
            except OSError:
                answers.append(b'')
    finally:
        sock.close()
    return answers


def _closed(sock, timeout=10):
    """Whether the peer closed ``sock`` within ``timeout``."""
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def _primary_count(primary, label):
    return primary._graph.query(
        'MATCH (n:%s) RETURN count(n)' % label).result_set[0][0]


def test_no_secret_is_ever_on_a_command_line(primary, replica):
    """Polled as the reviewer did (as fast as /proc can be read), through
    three starts of the sandbox: no command line of any process holds a
    secret the relay took, nor names a masterauth at all."""
    secrets_used = [replica._relay.secret]
    seen = []
    polling = threading.Event()

    def poll():
        while not polling.is_set():
            seen.extend(line for line in _cmdlines()
                        if b'masterauth' in line or b'tachyon' in line
                        or b'redis' in line)
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for _restart in range(3):
            os.kill(replica.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while replica._sandbox.alive() and time.monotonic() < deadline:
                time.sleep(0.01)
            replica.running()
            secrets_used.append(replica._relay.secret)
    finally:
        polling.set()
        poller.join(30)
    # What the sandbox writes is this user's only.
    directory = os.path.dirname(replica.running().socket_path)
    for name in os.listdir(directory):
        mode = os.stat(os.path.join(directory, name)).st_mode
        assert not mode & 0o077, (name, oct(mode))
    # A secret per start: one that leaked would not open the next.
    assert len(set(secrets_used)) == 4
    assert any(b'redis-server' in line for line in seen)
    for line in seen:
        assert b'masterauth' not in line, line
        for secret in secrets_used:
            assert secret.encode() not in line, line
    # The replica still follows the server.
    primary._graph.query('CREATE (:Later {name: "later"})')
    sandbox = replica.running()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = sandbox.query('MATCH (n:Later) RETURN n.name AS uuid, '
                             '1 AS score', max_rows=10)[1]
        if rows:
            break
        time.sleep(0.05)
    assert rows == [[b'later', 1]] or rows == [['later', 1]], rows


@pytest.mark.parametrize('first', [
    command(b'PING'),
    command(b'GRAPH.QUERY', b'g', b'CREATE (:Intruder)'),
    command(b'CONFIG', b'GET', b'dir'),
    command(b'GRAPH.LIST'),
    command(b'AUTH', b'not-the-secret'),
    command(b'REPLCONF', b'listening-port', b'1'),
    command(b'PSYNC', b'?', b'-1'),
    b'PING\r\n',
])
def test_nothing_passes_before_auth(primary, replica, first):
    port = replica._relay.port
    answers = _talk(port, first, command(b'GRAPH.LIST'))
    if first.startswith(b'*1\r\n$4\r\nPING'):
        # A replica's PING before its AUTH (Redis expects NOAUTH), then the
        # connection is cut at the next command that is not AUTH.
        assert answers[0].startswith(b'-NOAUTH'), answers
        assert answers[1] in (b'', b'-NOAUTH Authentication required.\r\n')
    elif first == b'PING\r\n':
        assert answers[0] == b'', answers    # no inline commands at all
    else:
        assert answers[0] in (b'', b'-NOAUTH Authentication required.\r\n')
        assert answers[1] == b'', answers
    assert _primary_count(primary, 'Intruder') == 0


@pytest.mark.parametrize('refused', [
    (b'GRAPH.QUERY', None, b'CREATE (:Intruder)'),
    (b'CONFIG', b'GET', b'dir'),
    (b'GRAPH.LIST',),
    (b'FLUSHALL',),
    (b'MULTI',),
    (b'AUTH', b'x'),
])
def test_after_auth_only_replication_commands_pass(primary, replica,
                                                   refused):
    """Even with the secret (a process that learnt it), the relay is a
    replication link and nothing else."""
    relay = replica._relay
    refused = command(*(primary.graph_name.encode() if part is None
                        else part for part in refused))
    sock = socket.create_connection(('127.0.0.1', relay.port), timeout=10)
    try:
        sock.sendall(command(b'AUTH', relay.secret.encode()))
        assert sock.recv(64) == b'+OK\r\n'
        # A replication command passes (the server answers it).
        sock.sendall(command(b'REPLCONF', b'listening-port', b'1'))
        assert sock.recv(64) == b'+OK\r\n'
        sock.sendall(refused)
        assert _closed(sock), 'the relay kept the connection'
    finally:
        sock.close()
    assert _primary_count(primary, 'Intruder') == 0
    # An old secret opens nothing once the sandbox started anew.
    old = relay.secret
    relay.rotate()
    assert _talk(relay.port, command(b'AUTH', old.encode()),
                 command(b'REPLCONF', b'listening-port', b'1'))[1] == b''


def _relay_threads():
    return [thread for thread in threading.enumerate()
            if thread.name.startswith('scorer-sandbox-relay')]


def test_held_connections_take_a_bounded_number_of_threads(
        primary, replica, monkeypatch):
    monkeypatch.setattr(relays, 'RELAY_HANDSHAKE_SECONDS', 1.0)
    before = len(_relay_threads())
    held = []
    for _number in range(60):
        try:
            held.append(socket.create_connection(
                ('127.0.0.1', replica._relay.port), timeout=2))
        except OSError:
            pass        # past the backlog: refused, as intended
    time.sleep(0.3)
    during = len(_relay_threads())
    # Accepting, RELAY_HANDSHAKES handshakes, the replica's connection
    # (two threads): nothing per held connection past them.
    assert during - before <= relays.RELAY_HANDSHAKES, (
        before, during)
    # A held connection that says nothing is cut within the handshake
    # time.
    assert _closed(held[0], timeout=10)
    for sock in held:
        sock.close()
    # And the replica, killed meanwhile, replicates again.
    os.kill(replica.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while replica._sandbox.alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    replica.running()
    assert replica._sandbox.alive()


def test_a_private_replica_acknowledges_no_write(primary, replica):
    """Tachyon's private replicas are never promoted: a write that only
    they hold is not held by a replica ([graph] replica_acks), and
    tachyon-status counts no replica (it said "2 replicas online" on a
    single embedded server)."""
    from tachyon_placement.graph import engine as graph_engine
    from tachyon_placement.graph import falkordb_engine
    from tachyon_placement.graph.cypher import Statement

    acked = falkordb_engine.FalkorDBEngine(
        primary.graph_name, unix_socket_path=primary._address[1],
        replica_acks=1, replica_ack_timeout=0.5)
    try:
        assert acked.replicas_online() == 0
        assert acked.replica_attribute_tables()[1:] == []
        write = Statement('test_acked_write',
                          common='CREATE (:Acked {name: "a"})')
        with pytest.raises(graph_engine.Unavailable, match='held by 0'):
            acked.write(write)
        # Written on the primary all the same (as after a lost answer).
        assert _primary_count(primary, 'Acked') == 1
    finally:
        acked.close()
