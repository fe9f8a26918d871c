"""A metric: a PromQL query and how its series map to providers."""
import dataclasses
import re

ROOT = 'root'            # the label names a compute host: a root's name
PROVIDER = 'provider'    # the label holds a provider uuid
TARGETS = (ROOT, PROVIDER)


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

    @classmethod
    def from_document(cls, name, document, generation=0):
        rewrite = document.get('rewrite') or {}
        return cls(name=name, query=document['query'],
                   label=document.get('label', 'instance'),
                   target=document.get('target', ROOT),
                   rewrite_pattern=rewrite.get('pattern'),
                   rewrite_replacement=rewrite.get('replacement', ''),
                   generation=generation)

    def stored(self):
        document = {'query': self.query, 'label': self.label,
                    'target': self.target}
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
        """{provider uuid: value} of Prometheus instant-query ``series``
        ([{'metric': {labels}, 'value': [time, 'text']}]); series that
        name no provider, or whose value is no finite number, are
        skipped."""
        found = {}
        for item in series:
            key = self.key_of(item.get('metric') or {})
            if self.target == ROOT:
                uuid = roots_by_name.get(key)
            else:
                uuid = key if key in providers else None
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
