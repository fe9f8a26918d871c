"""The reads behind GET /allocation_candidates.

Two steps, each a handful of static statements whatever the request:

1. Probes bound the roots a candidate can be anchored at.  Each probe
   starts from an index (a trait, an aggregate, a resource class) and
   returns the providers it matches with their root and, for sharing
   providers, the roots of their aggregate mates.  The selective probes
   (traits, aggregates) run first; the resource probes then only return
   providers in the roots those allowed (sharing providers always, they
   reach across trees).
2. ``SNAPSHOT`` loads the whole trees of the surviving roots, plus the
   trees of the sharing providers associated with them by aggregate, with
   traits, aggregates and inventories (``used`` is kept on the PROVIDES
   edge, so no allocation is read).

The search itself is ``domain.candidates``.
"""
from tachyon_placement.domain import candidates as domain
from tachyon_placement.domain import models
from tachyon_placement.graph.cypher import Statement

# For a sharing provider, the roots of every provider in one of its
# aggregates (itself included).
_MATES = ('CASE WHEN sharing THEN '
          '[(rp)-[:MEMBER_OF]->(:Aggregate)<-[:MEMBER_OF]-'
          '(mate:ResourceProvider) | mate.root_uuid] ELSE [] END')
_IS_SHARING = ('size([(rp)-[:HAS_TRAIT]->(shares:Trait {name: $sharing}) '
               '| shares]) > 0')

PROBE_TRAITS = Statement('cand_probe_traits', common="""
UNWIND $probes AS probe
MATCH (t:Trait)<-[:HAS_TRAIT]-(rp:ResourceProvider)
WHERE t.name IN probe.names
  AND (NOT probe.roots_only OR rp.parent_uuid IS NULL)
WITH DISTINCT probe.key AS key, probe.roots_only AS roots_only, rp
WITH key, rp, NOT roots_only AND %s AS sharing
RETURN key, rp.uuid AS uuid, rp.root_uuid AS root_uuid, %s AS anchors
""" % (_IS_SHARING, _MATES))

PROBE_AGGREGATES = Statement('cand_probe_aggregates', common="""
UNWIND $probes AS probe
MATCH (a:Aggregate)<-[:MEMBER_OF]-(rp:ResourceProvider)
WHERE a.uuid IN probe.names
WITH DISTINCT probe.key AS key, rp
WITH key, rp, %s AS sharing
RETURN key, rp.uuid AS uuid, rp.root_uuid AS root_uuid, %s AS anchors
""" % (_IS_SHARING, _MATES))

# The capacity test is Placement's; the domain repeats it exactly, this
# only has to keep every provider that could pass.  $roots null: no bound.
PROBE_RESOURCES = Statement('cand_probe_resources', common="""
UNWIND $probes AS probe
MATCH (:ResourceClass {name: probe.rc})<-[inv:PROVIDES]-(rp:ResourceProvider)
WHERE (probe.root IS NULL OR rp.root_uuid = probe.root)
  AND coalesce(inv.used, 0) + probe.amount <=
      (inv.total - coalesce(inv.reserved, 0))
      * coalesce(inv.allocation_ratio, 1.0)
  AND coalesce(inv.min_unit, 1) <= probe.amount
  AND coalesce(inv.max_unit, inv.total) >= probe.amount
  AND probe.amount %% coalesce(inv.step_size, 1) = 0
WITH probe.key AS key, rp, %s AS sharing
WHERE $roots IS NULL OR sharing OR rp.root_uuid IN $roots
RETURN key, rp.uuid AS uuid, rp.root_uuid AS root_uuid, %s AS anchors
""" % (_IS_SHARING, _MATES))

TREE_ROOTS = Statement('cand_tree_roots', common="""
UNWIND $uuids AS wanted
MATCH (rp:ResourceProvider {uuid: wanted})
RETURN rp.uuid AS uuid, rp.root_uuid AS root_uuid
""")

# Whole trees of $roots and of the sharing providers that share an
# aggregate with any provider in them.
SNAPSHOT = Statement('cand_snapshot', common="""
UNWIND $roots AS wanted_root
MATCH (member:ResourceProvider {root_uuid: wanted_root})
OPTIONAL MATCH (member)-[:MEMBER_OF]->(:Aggregate)<-[:MEMBER_OF]-
               (sharer:ResourceProvider)-[:HAS_TRAIT]->
               (:Trait {name: $sharing})
WITH collect(DISTINCT sharer.root_uuid) AS sharing_roots
UNWIND [r IN sharing_roots WHERE NOT r IN $roots] + $roots AS tree_root
MATCH (rp:ResourceProvider {root_uuid: tree_root})
RETURN rp.uuid AS uuid, rp.parent_uuid AS parent_uuid,
       rp.root_uuid AS root_uuid, rp.seq AS seq,
       [(rp)-[:HAS_TRAIT]->(t:Trait) | t.name] AS traits,
       [(rp)-[:MEMBER_OF]->(a:Aggregate) | a.uuid] AS aggregates,
       [(rp)-[inv:PROVIDES]->(rc:ResourceClass) |
        {resource_class: rc.name, total: inv.total, reserved: inv.reserved,
         min_unit: inv.min_unit, max_unit: inv.max_unit,
         step_size: inv.step_size, allocation_ratio: inv.allocation_ratio,
         used: inv.used}] AS inventories
""")

_PROBE_STATEMENTS = {'traits': PROBE_TRAITS, 'aggs': PROBE_AGGREGATES,
                     'rc': PROBE_RESOURCES}


def _inventory(data):
    return models.Inventory(**{key: value for key, value in data.items()
                               if value is not None})


class CandidateStore:
    """Mixin of Store: what the allocation candidate search reads."""

    def tree_roots(self, uuids):
        """{provider uuid: its root uuid} for the providers that exist."""
        if not uuids:
            return {}
        return {row['uuid']: row['root_uuid']
                for row in self.engine.read(TREE_ROOTS,
                                            uuids=sorted(set(uuids)))}

    def run_probes(self, probes, roots=None):
        """{probe key: [domain.ProbeRow]} for ``probes`` of any kinds.

        ``roots`` (resource probes only): ignore non-sharing providers
        outside these roots.
        """
        found = {probe.key: [] for probe in probes}
        by_kind = {}
        for probe in probes:
            by_kind.setdefault(probe.kind, []).append(probe.as_params())
        for kind, params in sorted(by_kind.items()):
            extra = {}
            if kind == 'rc':
                extra['roots'] = sorted(roots) if roots is not None else None
            rows = self.engine.read(_PROBE_STATEMENTS[kind], probes=params,
                                    sharing=domain.SHARING_TRAIT, **extra)
            for row in rows:
                found[row['key']].append(domain.ProbeRow(
                    uuid=row['uuid'], root_uuid=row['root_uuid'],
                    anchors=tuple(row['anchors'] or ())))
        return found

    def candidate_snapshot(self, roots):
        """domain.Snapshot of the trees of ``roots`` and of the sharing
        providers associated with them."""
        if not roots:
            return domain.Snapshot([])
        rows = self.engine.read(SNAPSHOT, roots=sorted(roots),
                                sharing=domain.SHARING_TRAIT)
        nodes = {}
        for row in rows:
            if row['uuid'] in nodes:
                continue
            nodes[row['uuid']] = domain.ProviderNode(
                row['uuid'], parent_uuid=row['parent_uuid'],
                root_uuid=row['root_uuid'], seq=row['seq'],
                traits=row['traits'], aggregates=row['aggregates'],
                inventories={inv['resource_class']: _inventory(inv)
                             for inv in row['inventories']})
        return domain.Snapshot(nodes.values())
