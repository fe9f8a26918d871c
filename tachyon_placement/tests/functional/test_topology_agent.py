"""tachyon-topology-agent against a served Tachyon: it reads a server's
sysfs tree (shipped with the tests) and this machine's, publishes the
document through keystoneauth1 (admin_token on a noauth2 service), links
to the providers Nova made, publishes again only when something changed."""
import os
import shutil
import subprocess
import sys

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                        'fixtures', 'sysfs')


def _agent(api, tmp_path, sysfs_root, host, *extra):
    config = tmp_path / 'agent.conf'
    config.write_text(
        '[placement]\nauth_type = admin_token\nendpoint = %s\n'
        'token = admin\n[topology_agent]\nhost = %s\nsysfs_root = %s\n'
        'interval = 0\n%s' % (api.url, host, sysfs_root, ''.join(extra)))
    result = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.topology_agent',
         '--config-file', str(config), '--once'],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


def _ok(result):
    status, body = result
    assert status in (200, 201, 204), (status, body)
    return body


def _nova_like_host(api, host):
    """The providers Nova's report client makes for this server: the
    compute node, and the PF as [pci] report_in_placement names it."""
    root = _ok(api.request('POST', '/resource_providers', {'name': host}))
    pf = _ok(api.request('POST', '/resource_providers', {
        'name': '%s_0000:3B:00.0' % host,
        'parent_provider_uuid': root['uuid']}))
    return root['uuid'], pf['uuid']


def test_agent_publishes_a_servers_topology_once_and_on_change(
        api, tmp_path):
    root, pf = _nova_like_host(api, 'cn1')
    sysfs_root = str(tmp_path / 'sysfs')
    shutil.copytree(os.path.join(FIXTURES, 'r740-2s-2n'), sysfs_root,
                    symlinks=True)
    log = _agent(api, tmp_path, sysfs_root, 'cn1',
                 'physical_device_mappings = physnet1:ens1f0\n')
    assert 'topology of cn1: created' in log
    view = _ok(api.request('GET', '/tachyon/topology/hosts/cn1'))
    assert view['generation'] == 0
    assert view['root_provider_uuid'] == root
    assert [node['socket'] for node in view['numa_nodes']] == [0, 1]
    devices = {d['address']: d for d in view['pci_devices']}
    assert devices['0000:3b:00.0']['provider_uuid'] == pf
    assert devices['0000:3b:02.0']['provider_uuid'] == pf
    assert devices['0000:3b:00.0']['physical_network'] == 'physnet1'
    assert devices['0000:3b:00.0']['vfs'] == [
        '0000:3b:02.0', '0000:3b:02.1', '0000:3b:02.2', '0000:3b:02.3']

    # Nothing changed: nothing published.
    log = _agent(api, tmp_path, sysfs_root, 'cn1',
                 'physical_device_mappings = physnet1:ens1f0\n')
    assert 'topology of cn1: unchanged' in log
    assert _ok(api.request('GET', '/tachyon/topology/hosts/cn1'))[
        'generation'] == 0

    # Hugepages were taken: published again, at the next generation.
    free = os.path.join(sysfs_root, 'sys', 'devices', 'system', 'node',
                        'node1', 'hugepages', 'hugepages-1048576kB',
                        'free_hugepages')
    with open(free, 'w') as out:
        out.write('2\n')
    log = _agent(api, tmp_path, sysfs_root, 'cn1',
                 'physical_device_mappings = physnet1:ens1f0\n')
    assert 'topology of cn1: updated' in log
    view = _ok(api.request('GET', '/tachyon/topology/hosts/cn1'))
    assert view['generation'] == 1
    assert view['numa_nodes'][1]['hugepages'][1]['free'] == 2


def test_agent_publishes_this_machines_topology(api, tmp_path):
    host = 'this-host'
    _ok(api.request('POST', '/resource_providers', {'name': host}))
    log = _agent(api, tmp_path, '/', host)
    assert 'topology of %s: created' % host in log
    view = _ok(api.request('GET', '/tachyon/topology/hosts/%s' % host))
    online = open('/sys/devices/system/cpu/online').read().strip()
    cpus = sorted(cpu for node in view['numa_nodes'] for cpu in node['cpus'])
    assert cpus[0] == int(online.split(',')[0].split('-')[0])
    assert view['root_provider_uuid'] is not None


def test_agent_says_why_it_failed(api, tmp_path):
    config = tmp_path / 'agent.conf'
    config.write_text(
        '[placement]\nauth_type = admin_token\nendpoint = %s\n'
        'token = user\n[topology_agent]\nhost = cn1\nsysfs_root = %s\n'
        % (api.url, os.path.join(FIXTURES, 'epyc-2s-4n')))
    result = subprocess.run(
        [sys.executable, '-m', 'tachyon_placement.cmd.topology_agent',
         '--config-file', str(config), '--once'],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert '403' in result.stderr
