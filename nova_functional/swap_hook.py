"""Installs tachyon_in_placement's swap when Placement's fixture module is
imported, not before: the ``.pth`` file nova_functional/run.sh writes
imports this module (stdlib only) at every interpreter start of its venv,
and Tachyon's modules must be imported after Nova's tests monkey-patch
the process with eventlet (a lock made before would be a real one that
blocks every green thread)."""
import importlib.abc
import importlib.util
import os
import sys

FIXTURE_MODULE = 'placement.tests.functional.fixtures.placement'


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        import tachyon_in_placement
        tachyon_in_placement.install(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != FIXTURE_MODULE:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install():
    if os.environ.get('TACHYON_NOVA_SWAP') == '1' and not any(
            isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
