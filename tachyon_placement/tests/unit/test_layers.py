"""The arrows between the rooms point one way (doc/source/contributor/
architecture and DESIGN.md): storage and the domain know no capability
and no web layer; only the composition root (deploy.py) knows every room.
Read from the source's import statements, so a new arrow fails here."""
import ast
import collections
import os

import tachyon_placement

PACKAGE = os.path.dirname(tachyon_placement.__file__)

# What each room may import besides itself, and the leaf every room may
# record into (monitoring/: Prometheus metrics, importing nothing of ours).
LEAF = 'monitoring'
ALLOWED = {
    'monitoring': set(),
    'domain': set(),
    # Engine processes: servers started, watched, stopped; nothing else.
    'processes': set(),
    'graph': {'domain', 'processes'},
    'world': {'domain', 'graph', 'weighing', 'topology', 'telemetry'},
    'weighing': {'domain', 'graph', 'world'},
    'telemetry': {'domain', 'graph', 'world', 'weighing'},
    'topology': {'domain', 'graph', 'world', 'telemetry'},
    'importing': {'domain', 'graph'},
    # A restore holds every record to the API's rules (schemas/: data).
    'backup': {'domain', 'graph', 'importing', 'schemas'},
    'capacity': {'domain'},
    'whatif': {'domain', 'world'},
    'usecases': {'domain', 'graph', 'world', 'weighing', 'telemetry',
                 'topology', 'capacity'},
    # Runs inside nova-scheduler: nothing of Tachyon's service.
    'nova': set(),
}
# Only the processes' entry points assemble the service.
COMPOSITION_ROOT = 'deploy'
ENTRY_POINTS = {'cmd', 'wsgi'}


def _room_imports():
    """{room: {room it imports}} of the package's modules (tests left
    out); a room is a subpackage or a top-level module."""
    found = collections.defaultdict(set)
    for directory, _dirs, files in os.walk(PACKAGE):
        relative = os.path.relpath(directory, PACKAGE)
        if relative.split(os.sep)[0] == 'tests':
            continue
        for filename in files:
            if not filename.endswith('.py'):
                continue
            room = (relative.split(os.sep)[0] if relative != '.'
                    else filename[:-3])
            with open(os.path.join(directory, filename)) as source:
                tree = ast.parse(source.read())
            for node in ast.walk(tree):
                for name in _imported(node):
                    parts = name.split('.')
                    if parts[0] == 'tachyon_placement' and len(parts) > 1:
                        if parts[1] != room:
                            found[room].add(parts[1])
    return found


def _imported(node):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module == 'tachyon_placement':
            return ['tachyon_placement.%s' % alias.name
                    for alias in node.names]
        return [node.module]
    return []


def test_rooms_import_only_downwards():
    imports = _room_imports()
    # The rooms it names exist (a rename would leave this checking none).
    assert all(os.path.isdir(os.path.join(PACKAGE, room))
               for room in ALLOWED), sorted(ALLOWED)
    assert imports['graph'] and imports['world'], 'no import read'
    wrong = {room: sorted(imports[room] - allowed - {LEAF})
             for room, allowed in ALLOWED.items()
             if imports[room] - allowed - {LEAF}}
    assert not imports[LEAF], imports[LEAF]
    assert not wrong, wrong


def test_only_entry_points_import_the_composition_root():
    importers = {room for room, targets in _room_imports().items()
                 if COMPOSITION_ROOT in targets}
    assert importers and importers <= ENTRY_POINTS, importers


def _imports_of(path):
    with open(path) as source:
        tree = ast.parse(source.read())
    return {name for node in ast.walk(tree) for name in _imported(node)}


def _service_modules():
    """(module name, path) of each module of the service (tests left
    out)."""
    for directory, _dirs, files in os.walk(PACKAGE):
        relative = os.path.relpath(directory, PACKAGE)
        if relative.split(os.sep)[0] == 'tests':
            continue
        for filename in files:
            if filename.endswith('.py'):
                path = os.path.join(directory, filename)
                yield ('tachyon_placement.' + os.path.relpath(
                    path, PACKAGE)[:-3].replace(os.sep, '.'), path)


def test_only_the_nova_room_imports_nova():
    """Nova is no dependency of Tachyon's service: only the weigher that
    nova-scheduler loads imports it, and the options the sample
    configuration generator reads do not."""
    importers = {module for module, path in _service_modules()
                 if any(name == 'nova' or name.startswith('nova.')
                        for name in _imports_of(path))}
    assert importers == {'tachyon_placement.nova.weigher'}, importers


# Rooms entered through their package's names only: outside the room a
# module imports the package, never one of its modules (tests may).
ENTERED_BY_PACKAGE = ('tachyon_placement.processes',
                      'tachyon_placement.domain.candidates')


def _modules_named(node):
    """The modules an import statement names (``from package import
    module`` names ``package.module``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module] + ['%s.%s' % (node.module, alias.name)
                                for alias in node.names]
    return []


def test_rooms_are_entered_through_their_package():
    modules = dict(_service_modules())
    entered = collections.defaultdict(set)
    for module, path in modules.items():
        with open(path) as source:
            tree = ast.parse(source.read())
        for node in ast.walk(tree):
            for name in _modules_named(node):
                for room in ENTERED_BY_PACKAGE:
                    inside = module == room or module.startswith(room + '.')
                    if (name.startswith(room + '.') and name in modules
                            and not inside):
                        entered[room].add('%s imports %s' % (module, name))
    assert all(any(module.startswith(room + '.') for module in modules)
               for room in ENTERED_BY_PACKAGE), ENTERED_BY_PACKAGE
    assert not entered, dict(entered)
