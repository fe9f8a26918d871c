"""A metric: a PromQL query and how its series map to providers."""
import dataclasses
import re

ROOT = 'root'            # the label names a compute host: a root's name
PROVIDER = 'provider'    # the label holds a provider uuid
# The label names a compute host and ``numa_label`` one of its NUMA nodes
# (node_exporter's node_memory_numa_*{node="0"}): for hosts whose tree
# does not model NUMA nodes (see numa_key).
NUMA = 'numa'
TARGETS = (ROOT, PROVIDER, NUMA)


def numa_key(root_uuid, node_id):
    """What a value of a NUMA-target metric is stored under: NUMA node
    ``node_id`` (the topology's id) of the host whose root is
    ``root_uuid``."""
    return '%s/numa/%d' % (root_uuid, node_id)


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    query: str
    label: str = 'instance'
    target: str = ROOT
    # Optional re.sub of the label value before matching (e.g. strip the
    # port of node_exporter's instance="host:9100", or a domain).
    rewrite_pattern: str = None
    rewrite_replacement: str = ''
    generation: int = 0
    # target NUMA: the label holding the NUMA node's id
    numa_label: str = 'node'

    @classmethod
    def from_document(cls, name, document, generation=0):
        rewrite = document.get('rewrite') or {}
        return cls(name=name, query=document['query'],
                   label=document.get('label', 'instance'),
                   target=document.get('target', ROOT),
                   rewrite_pattern=rewrite.get('pattern'),
                   rewrite_replacement=rewrite.get('replacement', ''),
                   generation=generation,
                   numa_label=document.get('numa_label', 'node'))

    def stored(self):
        document = {'query': self.query, 'label': self.label,
                    'target': self.target}
        if self.target == NUMA:
            document['numa_label'] = self.numa_label
        if self.rewrite_pattern is not None:
            document['rewrite'] = {'pattern': self.rewrite_pattern,
                                   'replacement': self.rewrite_replacement}
        return document

    def as_document(self):
        return dict(self.stored(), name=self.name,
                    generation=self.generation)

    def key_of(self, labels):
        """The provider key a series' labels name (before lookup)."""
        value = labels.get(self.label)
        if value is None:
            return None
        if self.rewrite_pattern is not None:
            value = re.sub(self.rewrite_pattern, self.rewrite_replacement,
                           value)
        return value

    def values(self, series, roots_by_name, providers):
        """{provider uuid (numa_key for target NUMA): value} of
        Prometheus instant-query ``series`` ([{'metric': {labels},
        'value': [time, 'text']}]); series that name no provider (or no
        NUMA node), or whose value is no finite number, are skipped."""
        found = {}
        for item in series:
            labels = item.get('metric') or {}
            key = self.key_of(labels)
            if self.target == PROVIDER:
                uuid = key if key in providers else None
            else:
                uuid = roots_by_name.get(key)
            if uuid is not None and self.target == NUMA:
                try:
                    uuid = numa_key(uuid, int(labels.get(self.numa_label)))
                except (TypeError, ValueError):
                    uuid = None
            if uuid is None:
                continue
            try:
                value = float(item['value'][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if value != value or value in (float('inf'), float('-inf')):
                continue
            found[uuid] = value
        return found
