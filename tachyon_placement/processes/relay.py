"""The relay through which a sandbox replicates the serving server.

Replication needs a TCP connection; the embedded server listens on a unix
socket only, so a replica (processes/replicas.py) connects to a loopback
port of this process.  Any local user can reach that port, so the relay
is a gate, not a pipe: it takes nothing before ``AUTH`` with a secret made
for each sandbox start (which never appears on a command line: the
sandbox is told it over its own 0700 socket), then passes only the
replication commands (REPLCONF, PSYNC, SYNC, PING) to the server and cuts
a connection that sends anything else; it serves a few connections at
once, each handshake within a few seconds.
"""
import hmac
import logging
import secrets
import socket
import threading
import time

LOG = logging.getLogger(__name__)

# What a replica sends the server it replicates (Redis' replication
# handshake after AUTH, then its acknowledgements): the relay passes
# these only.
REPLICATION_COMMANDS = frozenset((b'REPLCONF', b'PSYNC', b'SYNC', b'PING'))
# The relay's bounds: connections being authenticated at once (a thread
# each, for RELAY_HANDSHAKE_SECONDS at most), connections relayed at
# once (a replica's two: Redis 8 sends the copy of the graph on a channel
# of its own beside the replication link; and those of the one replacing
# it while the first one's close), and its listen backlog.
RELAY_HANDSHAKES = 4
RELAY_HANDSHAKE_SECONDS = 5.0
RELAY_CONNECTIONS = 4
RELAY_BACKLOG = 8
# Seconds between two log lines about refused connections.
REFUSAL_LOG_EVERY = 10.0


class Relay:
    """A loopback TCP port through which a sandbox replicates the serving
    server (see the module): nothing before ``AUTH <secret>`` (a PING is
    answered NOAUTH, as Redis' replicas expect), then only the
    replication commands are passed to ``connect()`` (a socket to the
    serving server, authenticated there if it needs it); anything else
    cuts the connection.  ``rotate()`` makes a new secret (one per
    sandbox start)."""

    def __init__(self, connect):
        self._connect = connect
        self.secret = secrets.token_hex(24)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(RELAY_BACKLOG)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._sockets = set()
        self._handshakes = threading.BoundedSemaphore(RELAY_HANDSHAKES)
        self._relayed = threading.BoundedSemaphore(RELAY_CONNECTIONS)
        self._refusal_logged = -REFUSAL_LOG_EVERY
        threading.Thread(target=self._accept, name='scorer-sandbox-relay',
                         daemon=True).start()

    def rotate(self):
        """A new secret: a connection that knew the last one is refused."""
        self.secret = secrets.token_hex(24)
        return self.secret

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            # A thread per handshake, a few at once: past them a
            # connection is closed at once (the replica retries each
            # second).
            if not self._handshakes.acquire(blocking=False):
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,),
                             name='scorer-sandbox-relay-connection',
                             daemon=True).start()

    @staticmethod
    def _read_command(client, buffered, deadline=None):
        """One RESP array command from ``client`` (reading more as
        needed, until ``deadline``, a monotonic time): (list of bytes, its
        bytes, the bytes after it)."""
        data = buffered
        while True:
            parsed = _parse_command(data)
            if parsed is not None:
                arguments, rest = parsed
                return arguments, data[:len(data) - len(rest)], rest
            if len(data) > 4096:
                raise ValueError('command too long')
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ValueError('no AUTH in time')
                client.settimeout(remaining)
            chunk = client.recv(4096)
            if not chunk:
                raise ValueError('closed')
            data += chunk

    def _authenticate(self, client):
        """The bytes after a good ``AUTH <secret>`` (ValueError for
        anything else; a PING before it is answered NOAUTH)."""
        deadline = time.monotonic() + RELAY_HANDSHAKE_SECONDS
        rest = b''
        for _attempt in range(2):
            rest = rest.lstrip(b'\r\n')
            command, _raw, rest = self._read_command(client, rest, deadline)
            verb = command[0].upper() if command else b''
            if verb == b'AUTH' and len(command) == 2 and hmac.compare_digest(
                    command[1], self.secret.encode()):
                client.sendall(b'+OK\r\n')
                return rest
            client.sendall(b'-NOAUTH Authentication required.\r\n')
            if verb != b'PING':
                break
        raise ValueError('no AUTH with the secret')

    def _serve(self, client):
        upstream = None
        try:
            try:
                rest = self._authenticate(client)
            finally:
                self._handshakes.release()
            if not self._relayed.acquire(blocking=False):
                raise ValueError('%d connections are relayed already'
                                 % RELAY_CONNECTIONS)
        except (OSError, ValueError) as exc:
            client.close()
            self._told_refusal(exc)
            return
        try:
            try:
                upstream = self._connect()
            except OSError as exc:
                LOG.warning('The replication relay could not reach the '
                            'graph server: %s', exc)
                return
            client.settimeout(None)
            self._sockets.update((client, upstream))
            threading.Thread(target=_pipe, args=(upstream, client),
                             name='scorer-sandbox-relay-stream',
                             daemon=True).start()
            self._gate(client, upstream, rest)
        finally:
            self._relayed.release()
            for sock in (client, upstream):
                if sock is not None:
                    _shut(sock)
                    sock.close()
                    self._sockets.discard(sock)

    def _told_refusal(self, exc):
        """Log a connection the relay refused (a replica that cannot
        sync says why; so does a local process knocking), one line per
        REFUSAL_LOG_EVERY seconds at most: anyone can connect."""
        now = time.monotonic()
        if now - self._refusal_logged < REFUSAL_LOG_EVERY:
            return
        self._refusal_logged = now
        LOG.warning('The replication relay refused a connection: %s', exc)

    @classmethod
    def _gate(cls, client, upstream, rest):
        """Pass the replica's commands to the server while they are
        replication commands (and the newlines a loading replica sends to
        keep its link); anything else ends the connection."""
        while True:
            newlines = len(rest) - len(rest.lstrip(b'\r\n'))
            if newlines:
                upstream.sendall(rest[:newlines])
                rest = rest[newlines:]
            try:
                command, raw, rest = cls._read_command(client, rest)
            except OSError:
                return
            except ValueError as exc:
                if str(exc) != 'closed':
                    LOG.warning('The replication relay cut a connection: '
                                '%s', exc)
                return
            verb = command[0].upper() if command else b''
            if verb not in REPLICATION_COMMANDS:
                LOG.warning('The replication relay cut a connection that '
                            'sent %r, not a replication command',
                            verb[:32])
                return
            upstream.sendall(raw)

    def close(self):
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass
        for sock in list(self._sockets):
            _shut(sock)
            sock.close()


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _parse_command(data):
    """(arguments, rest) of one RESP array at the start of ``data``, or
    None when it is not whole yet; ValueError when it is no array."""
    if not data:
        return None
    if not data.startswith(b'*'):
        raise ValueError('not a command')
    end = data.find(b'\r\n')
    if end < 0:
        return None
    count = int(data[1:end])
    if not 0 < count <= 32:
        raise ValueError('not a replication command (%d arguments)'
                         % count)
    position = end + 2
    arguments = []
    for _ in range(count):
        end = data.find(b'\r\n', position)
        if end < 0:
            return None
        if data[position:position + 1] != b'$':
            raise ValueError('not a bulk string')
        size = int(data[position + 1:end])
        if not 0 <= size <= 1024:
            raise ValueError('argument too long')
        start = end + 2
        if len(data) < start + size + 2:
            return None
        arguments.append(data[start:start + size])
        position = start + size + 2
    return arguments, data[position:]


def resp_command(*arguments):
    """The RESP encoding of a command."""
    return b'*%d\r\n' % len(arguments) + b''.join(
        b'$%d\r\n%s\r\n' % (len(argument), argument)
        for argument in arguments)


def sync_at_once(connect):
    """Ask the serving server to send a new replica its copy at once
    rather than after 5 s (repl-diskless-sync-delay, there for several
    replicas arriving together).  A server that refuses CONFIG (a managed
    one) keeps its delay."""
    try:
        sock = connect()
    except OSError:
        return
    try:
        sock.settimeout(5)
        sock.sendall(resp_command(b'CONFIG', b'SET',
                                  b'repl-diskless-sync-delay', b'0'))
        sock.recv(256)
    except OSError:
        pass
    finally:
        sock.close()


def _pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    for sock in (source, target):
        _shut(sock)
