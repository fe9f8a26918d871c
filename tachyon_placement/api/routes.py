"""The route table: URL -> {HTTP method: handler}.

A known URL requested with a method not listed here gets 405 with an Allow
header, automatically (see app.make_mapper).
"""
from tachyon_placement.api.handlers import aggregate
from tachyon_placement.api.handlers import allocation
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import capacity
from tachyon_placement.api.handlers import changes
from tachyon_placement.api.handlers import drift
from tachyon_placement.api.handlers import explain
from tachyon_placement.api.handlers import host_weights
from tachyon_placement.api.handlers import inventory
from tachyon_placement.api.handlers import metric
from tachyon_placement.api.handlers import monitoring
from tachyon_placement.api.handlers import pci_affinity
from tachyon_placement.api.handlers import reshaper
from tachyon_placement.api.handlers import resource_class
from tachyon_placement.api.handlers import resource_provider
from tachyon_placement.api.handlers import root
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.api.handlers import topology
from tachyon_placement.api.handlers import trait
from tachyon_placement.api.handlers import usage
from tachyon_placement.api.handlers import weigher
from tachyon_placement.api.handlers import whatif

ROUTES = {
    # '' as well as '/' so that a mount point works with or without slash.
    '/': {'GET': root.home},
    '': {'GET': root.home},
    '/resource_classes': {
        'GET': resource_class.list_resource_classes,
        'POST': resource_class.create_resource_class,
    },
    '/resource_classes/{name}': {
        'GET': resource_class.get_resource_class,
        'PUT': resource_class.update_resource_class,
        'DELETE': resource_class.delete_resource_class,
    },
    '/resource_providers': {
        'GET': resource_provider.list_resource_providers,
        'POST': resource_provider.create_resource_provider,
    },
    '/resource_providers/{uuid}': {
        'GET': resource_provider.get_resource_provider,
        'PUT': resource_provider.update_resource_provider,
        'DELETE': resource_provider.delete_resource_provider,
    },
    '/resource_providers/{uuid}/inventories': {
        'GET': inventory.get_inventories,
        'POST': inventory.create_inventory,
        'PUT': inventory.set_inventories,
        'DELETE': inventory.delete_inventories,
    },
    '/resource_providers/{uuid}/inventories/{resource_class}': {
        'GET': inventory.get_inventory,
        'PUT': inventory.update_inventory,
        'DELETE': inventory.delete_inventory,
    },
    '/resource_providers/{uuid}/usages': {
        'GET': usage.list_provider_usages,
    },
    '/resource_providers/{uuid}/aggregates': {
        'GET': aggregate.get_aggregates,
        'PUT': aggregate.set_aggregates,
    },
    '/resource_providers/{uuid}/allocations': {
        'GET': allocation.list_for_resource_provider,
    },
    '/allocations': {
        'POST': allocation.set_allocations,
    },
    '/allocation_candidates': {
        'GET': allocation_candidate.list_allocation_candidates,
    },
    '/allocations/{consumer_uuid}': {
        'GET': allocation.list_for_consumer,
        'PUT': allocation.set_allocations_for_consumer,
        'DELETE': allocation.delete_allocations,
    },
    '/usages': {
        'GET': usage.get_total_usages,
    },
    '/reshaper': {
        'POST': reshaper.reshape,
    },
    '/traits': {
        'GET': trait.list_traits,
    },
    '/traits/{name}': {
        'GET': trait.get_trait,
        'PUT': trait.put_trait,
        'DELETE': trait.delete_trait,
    },
    '/resource_providers/{uuid}/traits': {
        'GET': trait.list_provider_traits,
        'PUT': trait.set_provider_traits,
        'DELETE': trait.delete_provider_traits,
    },
}

# Tachyon's own routes: their own version (microversion.TACHYON_VERSIONS)
# and policy rules (tachyon:...), never a Placement microversion.
# A greedy segment: Routes' default ``[^/]+?`` before its ``$`` would match
# ``name\n`` as ``name`` (``$`` matches before a final newline), so
# ``PUT /tachyon/weighers/spread%0A`` would store "spread"; this way the
# handler sees the newline and refuses the name.
NAME_SEGMENT = '[^/]+'

TACHYON_ROUTES = {
    '/tachyon': {'GET': tachyon.home},
    '/tachyon/weighers': {
        'GET': weigher.list_weighers,
    },
    '/tachyon/weighers/{name:%s}' % NAME_SEGMENT: {
        'GET': weigher.get_weigher,
        'PUT': weigher.put_weigher,
        'DELETE': weigher.delete_weigher,
    },
    '/tachyon/explain/allocation_candidates': {
        'GET': explain.explain_candidates,
    },
    '/tachyon/host_weights': {
        'POST': host_weights.weigh_hosts,
    },
    '/tachyon/capacity': {
        'GET': capacity.get_capacity,
    },
    '/tachyon/drift': {
        'GET': drift.get_drift,
    },
    '/tachyon/drift/changes': {
        'GET': drift.get_drift_changes,
    },
    '/tachyon/sessions': {
        'GET': whatif.list_sessions,
        'POST': whatif.open_session,
    },
    '/tachyon/sessions/{session_id}': {
        'GET': whatif.show_session,
        'DELETE': whatif.discard_session,
    },
    '/tachyon/sessions/{session_id}/commit': {
        'POST': whatif.commit_session,
    },
    '/tachyon/telemetry/status': {
        'GET': metric.telemetry_status,
    },
    '/tachyon/monitoring/metrics': {
        'GET': monitoring.get_metrics,
    },
    '/tachyon/metrics': {
        'GET': metric.list_metrics,
    },
    '/tachyon/metrics/{name:%s}' % NAME_SEGMENT: {
        'GET': metric.get_metric,
        'PUT': metric.put_metric,
        'DELETE': metric.delete_metric,
    },
    '/tachyon/pci_affinity': {
        'GET': pci_affinity.list_rules,
    },
    '/tachyon/pci_affinity/{name:%s}' % NAME_SEGMENT: {
        'GET': pci_affinity.get_rule,
        'PUT': pci_affinity.put_rule,
        'DELETE': pci_affinity.delete_rule,
    },
    '/tachyon/changes': {
        'GET': changes.list_changes,
    },
    '/tachyon/changes/stream': {
        'GET': changes.stream_changes,
    },
    '/tachyon/topology/hosts': {
        'GET': topology.list_hosts,
    },
    '/tachyon/topology/hosts/{name:%s}' % NAME_SEGMENT: {
        'GET': topology.get_host,
        'PUT': topology.put_host,
        'DELETE': topology.delete_host,
    },
}
