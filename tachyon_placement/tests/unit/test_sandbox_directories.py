"""Sandboxes' directories left by a process that was killed (kill -9 of
the API left them in /tmp, a replica's holding dump.rdb, a whole copy of
the graph) are removed by the next process that starts a sandbox: only
this user's, old enough, and with no server on their socket."""
import os
import socket
import time

from tachyon_placement.processes import sandbox as sandboxes


def _directory(parent, name, age):
    path = parent / name
    path.mkdir(mode=0o700)
    (path / 'dump.rdb').write_bytes(b'a copy of the graph')
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_stale_sandbox_directories_are_removed_once(tmp_path, monkeypatch):
    monkeypatch.setattr(sandboxes, '_CLEANED', False)
    gone = _directory(tmp_path, 'tachyon-scorer-gone', 3600)
    young = _directory(tmp_path, 'tachyon-scorer-young', 1)
    other = _directory(tmp_path, 'not-a-sandbox', 3600)
    live = _directory(tmp_path, 'tachyon-scorer-live', 3600)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(live / 's.sock'))
    listener.listen(1)
    then = time.time() - 3600
    os.utime(live, (then, then))
    try:
        removed = sandboxes.clean_stale_directories(str(tmp_path))
    finally:
        listener.close()
    assert removed == ['tachyon-scorer-gone']
    assert not gone.exists()
    assert young.exists() and other.exists() and live.exists()
    # Once per process: a later sandbox start does not scan again.
    _directory(tmp_path, 'tachyon-scorer-later', 3600)
    assert sandboxes.clean_stale_directories(str(tmp_path)) == []
