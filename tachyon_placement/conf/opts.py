"""Entry point for oslo-config-generator (namespace tachyon_placement)."""
from tachyon_placement.conf import api
from tachyon_placement.conf import capacity
from tachyon_placement.conf import changes
from tachyon_placement.conf import graph
from tachyon_placement.conf import metrics
from tachyon_placement.conf import placement
from tachyon_placement.conf import telemetry
from tachyon_placement.conf import weighing
from tachyon_placement.conf import whatif


def list_opts():
    opts = {}
    for module in (api, capacity, changes, graph, metrics, placement,
                   telemetry, weighing, whatif):
        for group, group_opts in module.list_opts().items():
            opts[group] = group_opts
    return [(group, items) for group, items in opts.items()]
