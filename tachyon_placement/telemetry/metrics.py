"""A metric: a PromQL query and how its series map to providers."""
import dataclasses
import statistics

from tachyon_placement.telemetry import promql

ROOT = 'root'            # the label names a compute host: a root's name
PROVIDER = 'provider'    # the label holds a provider uuid
# The label names a compute host and ``numa_label`` one of its NUMA nodes
# (node_exporter's node_memory_numa_*{node="0"}): for hosts whose tree
# does not model NUMA nodes (see numa_key).
NUMA = 'numa'
TARGETS = (ROOT, PROVIDER, NUMA)

# How the values of several series that name one provider become one;
# without one such series are an error, never "the last one wins".
COMBINE = {'max': max, 'min': min, 'sum': sum, 'mean': statistics.fmean}


class SeveralSeries(ValueError):
    """Several series name one provider and the metric says no way to
    combine them."""


class NoProviders(ValueError):
    """Prometheus answered series, none of which names a provider."""


def _shown(labels):
    return '{%s}' % ', '.join('%s=%r' % (key, str(value)[:64])
                              for key, value in sorted(labels.items())[:6])


class NoNumbers(ValueError):
    """Prometheus answered, but not one value is a finite number (NaN,
    Inf, text): an outage of what it measures, not a measure (taken for
    one, a threshold's host at 95 % was offered under a max of 90)."""


_NUMA_PART = '/numa/'


def numa_key(root_uuid, node_id):
    """What a value of a NUMA-target metric is stored under: NUMA node
    ``node_id`` (the topology's id) of the host whose root is
    ``root_uuid``."""
    return '%s%s%d' % (root_uuid, _NUMA_PART, node_id)


def is_numa_key(key):
    return _NUMA_PART in key


def split_numa_key(key):
    """(root uuid, node id) of a numa_key, None for another key."""
    root, found, node = key.partition(_NUMA_PART)
    if not found:
        return None
    try:
        return root, int(node)
    except ValueError:
        return None


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
    # How several series of one provider combine (COMBINE); None: refused.
    combine: str = None
    # The lowest and highest value a series may have (None: no bound);
    # one outside is dropped, as a value that is no finite number is.
    bound_min: float = None
    bound_max: float = None

    @classmethod
    def from_document(cls, name, document, generation=0):
        rewrite = document.get('rewrite') or {}
        return cls(name=name, query=document['query'],
                   label=document.get('label', 'instance'),
                   target=document.get('target', ROOT),
                   rewrite_pattern=rewrite.get('pattern'),
                   rewrite_replacement=rewrite.get('replacement', ''),
                   generation=generation,
                   numa_label=document.get('numa_label', 'node'),
                   combine=document.get('combine'),
                   bound_min=(document.get('bounds') or {}).get('min'),
                   bound_max=(document.get('bounds') or {}).get('max'))

    def stored(self):
        document = {'query': self.query, 'label': self.label,
                    'target': self.target}
        if self.target == NUMA:
            document['numa_label'] = self.numa_label
        if self.rewrite_pattern is not None:
            document['rewrite'] = {'pattern': self.rewrite_pattern,
                                   'replacement': self.rewrite_replacement}
        if self.combine is not None:
            document['combine'] = self.combine
        bounds = {key: value for key, value in (
            ('min', self.bound_min), ('max', self.bound_max))
            if value is not None}
        if bounds:
            document['bounds'] = bounds
        return document

    def within_bounds(self, value):
        return ((self.bound_min is None or value >= self.bound_min)
                and (self.bound_max is None or value <= self.bound_max))

    def as_document(self):
        return dict(self.stored(), name=self.name,
                    generation=self.generation)

    def key_of(self, labels):
        """The provider key a series' labels name (before lookup)."""
        value = labels.get(self.label)
        if value is None:
            return None
        if self.rewrite_pattern is not None:
            value = promql.compiled(self.rewrite_pattern).sub(
                promql.python_replacement(self.rewrite_replacement), value)
        return value

    def matched(self, series, roots_by_name, providers):
        """How ``series`` (Prometheus instant-query results, [{'metric':
        {labels}, 'value': [time, 'text']}]) map to providers: ({provider
        uuid (numa_key for target NUMA): [values]}, [labels of series
        that name no provider], series skipped for a value that is no
        finite number, series dropped for a value outside the bounds)."""
        found, unmatched, skipped, outside = {}, [], 0, 0
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
                unmatched.append(labels)
                continue
            try:
                value = float(item['value'][1])
            except (KeyError, IndexError, TypeError, ValueError):
                skipped += 1
                continue
            if value != value or value in (float('inf'), float('-inf')):
                skipped += 1
                continue
            if not self.within_bounds(value):
                outside += 1
                continue
            found.setdefault(uuid, []).append(value)
        return found, unmatched, skipped, outside

    def values(self, series, roots_by_name, providers):
        """{provider uuid (numa_key for target NUMA): value} of
        ``series``; series that name no provider (or no NUMA node), or
        whose value is no finite number, are skipped; several series of
        one provider are combined as the metric says, else SeveralSeries.
        """
        return self.collected(series, roots_by_name, providers)[0]

    def collected(self, series, roots_by_name, providers):
        """(values() of ``series``, what the run found: {'series',
        'providers_matched', 'unmatched_series', 'non_finite_values',
        'out_of_bounds_values'})."""
        found, unmatched, skipped, outside = self.matched(
            series, roots_by_name, providers)
        if skipped and not found:
            raise NoNumbers(
                'none of the %d values Prometheus answered is a finite '
                'number (NaN, Inf or not a number): taken as a failed '
                'query' % skipped)
        if unmatched and not found:
            # What the dry run refuses: said at every run, in the status.
            raise NoProviders(
                'no series names a provider (%d series, e.g. %s): check '
                'the label and rewrite (PUT ...?dry_run=true)'
                % (len(unmatched), _shown(unmatched[0])))
        facts = {'series': len(series), 'providers_matched': len(found),
                 'unmatched_series': len(unmatched),
                 'non_finite_values': skipped,
                 'out_of_bounds_values': outside}
        values = {}
        for uuid, several in found.items():
            if len(several) == 1:
                values[uuid] = several[0]
            elif self.combine is None:
                raise SeveralSeries(
                    '%d series name provider %s: say how to combine them '
                    '(combine: %s) or aggregate them in the query (e.g. '
                    'avg by (instance))' % (len(several), uuid,
                                            ', '.join(sorted(COMBINE))))
            else:
                values[uuid] = COMBINE[self.combine](several)
        return values, facts

    def dry_run(self, series, roots_by_name, providers, shown=100):
        """What storing the metric would give, from one run's ``series``:
        the series count, the providers matched, the series that match
        none (their labels, at most ``shown``), the providers named by
        several series, and why it is refused (None: it is not)."""
        found, unmatched, skipped, outside = self.matched(
            series, roots_by_name, providers)
        several = {uuid: len(values) for uuid, values in found.items()
                   if len(values) > 1}
        refused = None
        if several and self.combine is None:
            refused = ('%d providers are named by several series: say how '
                       'to combine them (combine: %s) or aggregate them in '
                       'the query' % (len(several), ', '.join(
                           sorted(COMBINE))))
        elif not found:
            refused = 'no series names a provider'
        return {
            'series': len(series),
            'providers_matched': len(found),
            'unmatched_series': len(unmatched),
            'unmatched_examples': unmatched[:shown],
            'non_finite_values': skipped,
            'out_of_bounds_values': outside,
            'several_series': dict(sorted(several.items())[:shown]),
            'refused': refused,
        }
