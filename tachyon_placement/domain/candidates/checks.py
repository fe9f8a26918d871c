"""Placement's order of failures: which error a request raises first (an
unknown class or trait), and whether it would find nothing at all."""
import collections

from tachyon_placement.domain.candidates import probes as probe_rules


class UnknownResourceClass(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


class UnknownTrait(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


def check_request(groups, wide, unknown_classes, unknown_traits,
                  in_tree_roots, probes, results, bounds=None):
    """Raise what Placement raises first; False when it would find nothing
    (``bounds``: group_anchors(probes, results) if already made).

    Placement validates names while it searches, group after group, and
    stops at the first group without candidates: a later group's unknown
    trait then goes unnoticed.  The probes tell which groups match nothing
    at all.
    """
    for name in sorted(wide.root_required or ()):
        if name in unknown_traits:
            raise UnknownTrait(name)
    for name in sorted(wide.root_forbidden or ()):
        if name in unknown_traits:
            raise UnknownTrait(name)
    if bounds is None:
        bounds = probe_rules.group_anchors(probes, results)
    if wide.root_required and not bounds.get(None):
        return False
    nothing = probe_rules.ProbeResult()
    by_group = collections.defaultdict(list)
    for probe in probes:
        by_group[probe.group].append(probe)
    for index, group in enumerate(groups):
        for rc in group.resources:
            if rc in unknown_classes:
                raise UnknownResourceClass(rc)
        if group.member_of:
            members = None
            for probe in by_group[index]:
                if probe.kind != 'aggs':
                    continue
                found = results.get(probe.key, nothing).uuids
                members = found if members is None else members & found
            if not members:
                return False
        for any_of in group.required_traits:
            for name in sorted(any_of):
                if name in unknown_traits:
                    raise UnknownTrait(name)
        for name in sorted(group.forbidden_traits):
            if name in unknown_traits:
                raise UnknownTrait(name)
        if group.in_tree is not None and in_tree_roots.get(index) is None:
            return False
        for probe in by_group[index]:
            if probe.kind == 'rc' and not results.get(
                    probe.key, nothing).roots:
                return False
        if index in bounds and not bounds[index]:
            return False
    return True
