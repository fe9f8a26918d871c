"""Run a real tachyon-placement-api process on loopback for a test."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class ServedPlacement:
    """The API served by its console script with a config of its own."""

    def __init__(self, workdir, extra_conf='', appendfsync='everysec',
                 data_dir=None):
        """``data_dir``: another instance's, to share its engine as API
        worker processes do."""
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        self.config = os.path.join(self.workdir, 'placement.conf')
        self.data_dir = data_dir or os.path.join(self.workdir, 'graph')
        with open(self.config, 'w') as out:
            out.write('[api]\nauth_strategy = noauth2\n'
                      '[graph]\ndata_dir = %s\nappendfsync = %s\n%s'
                      % (self.data_dir, appendfsync, extra_conf))
        self.process = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self, timeout=60):
        log = open(os.path.join(self.workdir, 'api.log'), 'ab')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'tachyon_placement.cmd.api',
             '--config-file', self.config, '--port', str(self.port)],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('API exited: %s' % self.log_tail())
            try:
                self.request('GET', '/')
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError('API did not start: %s' % self.log_tail())

    def stop(self, sig=None):
        if self.process and self.process.poll() is None:
            if sig is None:
                self.process.terminate()
            else:
                self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def engine_pid(self):
        """Pid of the embedded FalkorDB server (see falkordb_server)."""
        with open(os.path.join(self.data_dir, 'server.pid')) as pid_file:
            return int(pid_file.read().split()[0])

    def log_tail(self):
        with open(os.path.join(self.workdir, 'api.log'), 'rb') as log:
            return log.read()[-3000:].decode('utf-8', 'replace')

    def request(self, method, path, body=None, version='latest',
                token='admin'):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        req.add_header('x-auth-token', token)
        req.add_header('openstack-api-version', 'placement %s' % version)
        req.add_header('accept', 'application/json')
        if data is not None:
            req.add_header('content-type', 'application/json')
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if text else None
