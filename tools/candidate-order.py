"""The order of GET /allocation_candidates as claims are made: Placement
16.0.0 (the reference, interop/reference_placement.py) beside Tachyon.

    .venv/bin/python tools/candidate-order.py [--servers 2] [--numa 2,3,1,2]

Builds the same cloud on each server (one host whose NUMA nodes have the
VCPUs given), asks for two isolated granular groups of one VCPU, and
claims the first candidate again and again (as Nova's scheduler does when
no weigher reorders hosts) until none is left, printing each list.  With
``--servers N``, N processes of each, each on a graph or database of its
own.

What it shows (doc/source/admin/capacity.rst): Placement returns its
merged candidates from a Python set, so its order depends on the
process's hash seed (two processes list the same cloud differently and
can reach different claim counts) and is reshuffled as claims take
candidates away; Tachyon's is the same in every process and a claim only
takes candidates away.  Needs openstack-placement (the test environment
has it, for the upstream suite) and loopback ports.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERY = 'resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate'


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _start(kind, workdir):
    port = _free_port()
    if kind == 'placement':
        conf = os.path.join(workdir, 'placement.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\nlog_file = %s/log\n[api]\n'
                    'auth_strategy = noauth2\n[placement_database]\n'
                    'connection = sqlite:///%s/placement.sqlite\n'
                    'sync_on_startup = True\n' % (workdir, workdir))
        command = [sys.executable,
                   os.path.join(ROOT, 'interop', 'reference_placement.py'),
                   '--config-file', conf, '--port', str(port)]
    else:
        conf = os.path.join(workdir, 'tachyon.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\nlog_file = %s/log\n[api]\n'
                    'auth_strategy = noauth2\n[graph]\ndata_dir = %s/graph\n'
                    % (workdir, workdir))
        command = [sys.executable, '-m', 'tachyon_placement.cmd.api',
                   '--config-file', conf, '--port', str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = 'http://127.0.0.1:%d' % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + '/', timeout=1).close()
            return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit('%s did not answer on %s' % (kind, url))


def _call(url, method, path, body=None):
    request = urllib.request.Request(
        url + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={'X-Auth-Token': 'admin', 'Accept': 'application/json',
                 'Content-Type': 'application/json',
                 'OpenStack-API-Version': 'placement 1.39'})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        raise SystemExit('%s %s: %s %s' % (method, path, error.code,
                                           error.read().decode()))
    return json.loads(text) if text else None


def _build(url, numa):
    """{provider uuid: name} of one host and its NUMA nodes."""
    host = str(uuid.UUID(int=1 << 64))
    names = {host: 'host'}
    _call(url, 'POST', '/resource_providers', {'name': 'host',
                                               'uuid': host})
    for index, vcpus in enumerate(numa):
        node = str(uuid.UUID(int=(1 << 64) + index + 1))
        names[node] = 'n%d' % index
        _call(url, 'POST', '/resource_providers', {
            'name': 'n%d' % index, 'uuid': node,
            'parent_provider_uuid': host})
        _call(url, 'PUT', '/resource_providers/%s/inventories' % node, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': vcpus}}})
    return names


def _claims(url, names):
    """[[candidate as 'group 1 node/group 2 node', ...] per claim]."""
    lists = []
    while True:
        found = _call(url, 'GET', '/allocation_candidates?' + QUERY)
        listed = found['allocation_requests']
        lists.append(['/'.join(names[request['mappings'][suffix][0]]
                               for suffix in sorted(request['mappings']))
                      for request in listed])
        if not listed:
            return lists
        _call(url, 'PUT', '/allocations/%s' % uuid.uuid4(), {
            'allocations': listed[0]['allocations'], 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--servers', type=int, default=2)
    parser.add_argument('--numa', default='2,3,1,2',
                        help='VCPUs of each NUMA node')
    args = parser.parse_args()
    numa = [int(vcpus) for vcpus in args.numa.split(',')]
    for kind in ('placement', 'tachyon'):
        for number in range(args.servers):
            with tempfile.TemporaryDirectory(prefix='candidate-order-') as \
                    workdir:
                process, url = _start(kind, workdir)
                try:
                    lists = _claims(url, _build(url, numa))
                finally:
                    process.terminate()
                    process.wait(timeout=30)
            print('%s process %d: %d claims' % (kind, number + 1,
                                                len(lists) - 1))
            for listed in lists:
                print('  %2d  %s' % (len(listed), ' '.join(listed)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
