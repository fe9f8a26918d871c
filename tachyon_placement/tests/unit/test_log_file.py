"""The service's log file is its owner's and group's only: it names
hosts, projects and errors of a cloud (it was 0644)."""
import os
import stat

from tachyon_placement import conf as tachyon_conf


def test_the_log_file_is_not_world_readable(tmp_path):
    path = tmp_path / 'placement.log'
    conf = tachyon_conf.new_conf(['--log-file', str(path)])
    old_umask = os.umask(0o022)
    try:
        tachyon_conf.setup_logging(conf, 'placement')
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    # One written before (by an older release) is made so too.
    os.chmod(path, 0o644)
    tachyon_conf.setup_logging(conf, 'placement')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
