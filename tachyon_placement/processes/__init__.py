"""Engine processes: the FalkorDB servers Tachyon starts, watches and
stops, as opposed to the statements it sends them (graph/).

* ``embedded``: the embedded FalkorDB server the API processes of a host
  share (``get_shared_server``);
* ``sandbox``: private servers under memory and time bounds, where
  operators' Cypher scorers are checked (``check``) and run;
* ``replicas``: sandboxes that hold the serving graph: a ``Replica`` of
  the serving server (the collector's scorers; ``Kept`` running for the
  feed server's reads), or a ``Copy`` of a graph an engine exports;
* ``relay``: the authenticated gate through which a replica reaches the
  serving server's unix socket;
* ``memory``: a process's resident memory.

graph/ and the other rooms use the names below, from this package;
the modules are this room's own.
"""
from tachyon_placement.processes.embedded import EmbeddedServer
from tachyon_placement.processes.embedded import get_shared_server
from tachyon_placement.processes.memory import resident_bytes
from tachyon_placement.processes.memory import resident_mib
from tachyon_placement.processes.relay import resp_command
from tachyon_placement.processes.replicas import Copy
from tachyon_placement.processes.replicas import Kept
from tachyon_placement.processes.replicas import Replica
from tachyon_placement.processes.sandbox import CHECKS_AT_ONCE
from tachyon_placement.processes.sandbox import check
from tachyon_placement.processes.sandbox import SandboxBroken
from tachyon_placement.processes.sandbox import SandboxError
from tachyon_placement.processes.sandbox import SandboxesBusy

__all__ = [
    'CHECKS_AT_ONCE', 'Copy', 'EmbeddedServer', 'Kept', 'Replica',
    'SandboxBroken', 'SandboxError', 'SandboxesBusy', 'check',
    'get_shared_server', 'resident_bytes', 'resident_mib',
    'resp_command']
