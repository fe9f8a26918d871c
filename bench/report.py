"""Statistics, the printed tables and the JSON results file."""
import json
import math
import os

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'results')


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _ms(v):
    return None if v is None else round(v * 1000.0, 2)


def latency_summary(values):
    if not values:
        return None
    return {'p50_ms': _ms(percentile(values, 50)),
            'p95_ms': _ms(percentile(values, 95)),
            'p99_ms': _ms(percentile(values, 99)),
            'mean_ms': _ms(sum(values) / len(values)),
            'max_ms': _ms(max(values)), 'n': len(values)}


def summarize(stats, kind, rss_mib=None):
    """One service's Stats in one workload -> a JSON-able dict."""
    out = {'requests': stats.requests, 'errors': stats.error_count,
           'error_samples': {k: {'count': stats.errors[k], 'sample': v}
                             for k, v in stats.error_samples.items()},
           'aborted': stats.aborted, 'rss_peak_mib': rss_mib,
           'seconds': round(stats.wall, 3)}
    if kind == 'read':
        out['latency'] = latency_summary(stats.latencies)
        out['ok'] = len(stats.latencies)
        # Serial requests: throughput of one client.
        busy = sum(stats.latencies)
        out['requests_per_s'] = (round(len(stats.latencies) / busy, 2)
                                 if busy else None)
        out['results'] = dict(stats.results.most_common(5))
    else:
        out['latency'] = latency_summary(stats.claim_latencies)
        out['ok'] = stats.claims
        out['op_latency'] = {k: latency_summary(v)
                             for k, v in stats.op_latencies.items()}
        out['claims'] = stats.claims
        out['puts'] = stats.puts
        out['conflicts'] = stats.conflicts
        out['conflict_codes'] = dict(stats.conflict_codes)
        out['conflict_rate'] = (round(stats.conflicts / stats.puts, 4)
                                if stats.puts else None)
        out['no_candidates'] = stats.no_candidates
        out['failed_claims'] = stats.failed_claims
        out['requests_per_s'] = (round(stats.requests / stats.wall, 2)
                                 if stats.wall else None)
        out['claims_per_s'] = (round(stats.claims / stats.wall, 2)
                               if stats.wall else None)
        if hasattr(stats, 'expected'):
            out['expected_claims'] = stats.expected
            out['timed_out'] = stats.timed_out
    return out


def ratio(t, p):
    if t is None or p is None or p == 0:
        return None
    return round(t / p, 3)


def _fmt(v, digits=1):
    if v is None:
        return '-'
    if isinstance(v, float):
        return '%.*f' % (digits, v)
    return str(v)


def _row(cells, widths, aligns):
    out = []
    for c, w, a in zip(cells, widths, aligns):
        out.append(c.ljust(w) if a == '<' else c.rjust(w))
    return '  '.join(out).rstrip()


def table(headers, rows, aligns=None):
    aligns = aligns or ['<'] * 2 + ['>'] * (len(headers) - 2)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = [_row(headers, widths, aligns),
             _row(['-' * w for w in widths], widths, aligns)]
    lines += [_row(r, widths, aligns) for r in rows]
    return '\n'.join(lines)


def latency(s, key):
    lat = s.get('latency') or {}
    return lat.get(key)


WORKLOAD_HEADERS = ['workload', 'service', 'ok', 'err', 'p50 ms', 'p95 ms',
                    'p99 ms', 'req/s', 'claims/s', '409 %', 'RSS MiB',
                    'results']


def workload_rows(name, per_service, labels):
    """Rows of one workload: one per service, then Tachyon/Placement."""
    rows = []
    for svc, s in per_service.items():
        err = str(s['errors']) + ('!' if s.get('aborted') else '')
        rate = s.get('conflict_rate')
        if s.get('ok') == 0 and s['errors']:
            status = sorted({k.rpartition(' -> ')[2]
                             for k in s['error_samples']})
            rows.append([name, labels[svc], '0', err,
                         'ERR ' + ','.join(status), '', '', '', '', '',
                         _fmt(s.get('rss_peak_mib'), 0),
                         'see Errors below'])
            name = ''
            continue
        results = s.get('results')
        if results:
            results = ','.join(str(k) for k in results)
        elif 'expected_claims' in s:
            results = '%d/%d claims' % (s['claims'], s['expected_claims'])
        elif s.get('cpu_ms_per_claim') is not None:
            # The scheduling loop: the service's CPU (API and engine).
            results = '%s ms CPU/claim' % _fmt(s['cpu_ms_per_claim'])
        rows.append([
            name, labels[svc], str(s.get('ok')), err,
            _fmt(latency(s, 'p50_ms')), _fmt(latency(s, 'p95_ms')),
            _fmt(latency(s, 'p99_ms')), _fmt(s.get('requests_per_s')),
            _fmt(s.get('claims_per_s')),
            _fmt(None if rate is None else rate * 100.0),
            _fmt(s.get('rss_peak_mib'), 0), results or ''])
        name = ''
    return rows


def ratios(per_service):
    p, t = per_service.get('placement'), per_service.get('tachyon')
    if not p or not t:
        return None
    return {
        'p50': ratio(latency(t, 'p50_ms'), latency(p, 'p50_ms')),
        'p95': ratio(latency(t, 'p95_ms'), latency(p, 'p95_ms')),
        'p99': ratio(latency(t, 'p99_ms'), latency(p, 'p99_ms')),
        'requests_per_s': ratio(t.get('requests_per_s'),
                                p.get('requests_per_s')),
        'claims_per_s': ratio(t.get('claims_per_s'), p.get('claims_per_s')),
        'rss_peak': ratio(t.get('rss_peak_mib'), p.get('rss_peak_mib')),
    }


def _x(v):
    return '-' if v is None else '%.2fx' % v


def _comparison(c):
    if not c:
        return ''
    if c['match']:
        return 'same answers'
    text = 'DIFFER: %d only in P, %d only in T' % (
        c['only_in_placement'], c['only_in_tachyon'])
    known = c.get('only_in_tachyon_placement_anchor_bug')
    if known:
        text += ' (%d: Placement anchor bug)' % known
    return text + (' (cut by limit)' if c['truncated_by_limit'] else '')


def render(results):
    """The human-readable report."""
    labels = {s: results['services'][s]['label']
              for s in results['services']}
    out = []
    cfg = results['config']
    out.append('%s: %d hosts (%d providers, %d consumers), seed %d, '
               'gunicorn %d workers x %d threads, %s'
               % (' vs '.join(reversed(list(labels.values()))) or 'Bench',
                  cfg['hosts'], results['cloud']['providers'],
                  results['cloud']['consumers'], cfg['seed'], cfg['workers'],
                  cfg['threads'], results['started']))
    out.append('')

    load = results.get('load') or {}
    if load:
        rows = []
        for svc, l in load.items():
            if 'error' in l:
                rows.append([labels[svc], 'FAILED: ' + l['error'][:90]]
                            + [''] * 6)
                continue
            nerr = sum(e['count'] for e in l['errors'].values())
            rows.append([labels[svc], _fmt(l['providers']['seconds']),
                         _fmt(l['allocations']['seconds']),
                         _fmt(l['total_seconds']),
                         _fmt(l['providers']['providers_per_s']),
                         _fmt(l['allocations']['consumers_per_s']),
                         str(nerr), _fmt(l.get('rss_peak_mib'), 0)])
        out.append('Load (%d client threads)' % cfg['load_workers'])
        out.append(table(['service', 'providers s', 'allocations s',
                          'total s', 'providers/s', 'consumers/s', 'errors',
                          'RSS MiB'], rows, ['<'] + ['>'] * 7))
        warmup = results.get('warmup')
        if warmup:
            out.append('Neo4j JVM warm-up before measuring (%s s): loads of '
                       '%d throwaway hosts took %s s, the first on the cold '
                       'JVM' % (warmup['seconds'], warmup['hosts'],
                                ' / '.join(str(s) for s in
                                           warmup['load_seconds'])))
        out.append('')

    warm = results.get('warm_workers')
    if warm:
        out.append('Warm-up (%d requests over %d connections at once, the '
                   'workloads\' URLs): RSS peak %s MiB' % (
                       warm['requests'], warm['connections'], ', '.join(
                           '%s %s' % (labels[svc], _fmt(mib, 0))
                           for svc, mib in warm['rss_peak_mib'].items())))
        out.append('')

    rows = []
    for name, per in (results.get('workloads') or {}).items():
        per_service = {k: v for k, v in per.items()
                       if k in labels}
        rows += workload_rows(name, per_service, labels)
        versus = per.get('versus')
        if versus:
            rows.append(['', 'vs base', '', '', _x(versus['p50_ms']),
                         _x(versus['p95_ms']), _x(versus['p99_ms']), '',
                         _x(versus.get('claims_per_s')) if 'claims_per_s'
                         in versus else '', '', '', versus['base']])
        rr = per.get('ratio')
        if rr:
            rows.append(['', 'T/P', '', '', _x(rr['p50']), _x(rr['p95']),
                         _x(rr['p99']), _x(rr['requests_per_s']),
                         _x(rr['claims_per_s']), '', _x(rr['rss_peak']),
                         _comparison(per.get('comparison'))])
    if rows:
        out.append('Workloads (latency of successful requests; sched: of a '
                   'claim, GET candidates + PUT until it succeeds)')
        out.append(table(WORKLOAD_HEADERS, rows,
                         ['<', '<'] + ['>'] * 9 + ['<']))
        out.append('')

    checks = results.get('checks') or {}
    if checks:
        rows = []
        for svc, c in checks.items():
            over = len(c['over_capacity'])
            rows.append([labels[svc], str(c['checked']), str(over),
                         str(c['usage_mismatch']), str(c['errors']),
                         'OK' if not (over or c['usage_mismatch']
                                      or c['errors']) else 'FAIL'])
        out.append('Usage check after the scheduling loop and the race')
        out.append(table(['service', 'providers', 'over capacity',
                          'usage != seeded', 'errors', 'verdict'], rows,
                         ['<'] + ['>'] * 5))
        out.append('')

    errors = []
    for name, per in (results.get('workloads') or {}).items():
        for svc, s in per.items():
            if svc in labels and s.get('error_samples'):
                for k, e in s['error_samples'].items():
                    errors.append('  %s / %s: %dx %s: %s' % (
                        name, labels[svc], e['count'], k, e['sample']))
    for name, per in (results.get('workloads') or {}).items():
        c = per.get('comparison')
        if c and not c['match'] and not c['truncated_by_limit']:
            for svc in ('placement', 'tachyon'):
                for sample in c['samples_only_in_%s' % svc]:
                    errors.append('  %s: only in %s: %s' % (
                        name, labels[svc], sample))
    for svc, l in load.items():
        for k, e in (l.get('errors') or {}).items():
            errors.append('  load / %s: %dx %s: %s' % (
                labels[svc], e['count'], k, e['sample']))
    for svc, c in checks.items():
        for s in c['over_capacity'][:5]:
            errors.append('  check / %s: over capacity %s' % (labels[svc], s))
        for s in c['mismatch_samples']:
            errors.append('  check / %s: usage mismatch %s'
                          % (labels[svc], s))
        for s in c['error_samples']:
            errors.append('  check / %s: %s' % (labels[svc], s))
    if errors:
        out.append('Errors and differences (first samples)')
        out += errors
        out.append('')
    out += _memory_lines(results, labels)
    if results.get('error'):
        out.append('RUN FAILED: %s' % results['error'])
    return '\n'.join(out)


def _memory_lines(results, labels):
    """The RSS peak over the run per service, and which processes made
    it."""
    out = []
    peaks = [(labels[svc], entry.get('rss_peak_mib'))
             for svc, entry in results['services'].items()]
    if not any(mib for _label, mib in peaks):
        return out
    out.append('RSS peak over the run (service and engine): %s MiB' % (
        ', '.join('%s %s' % (label, _fmt(mib, 0)) for label, mib in peaks)))
    for svc, entry in results['services'].items():
        parts = entry.get('rss_peak_parts')
        if parts:
            out.append('  %s at its peak (%s): %s' % (
                labels[svc], parts['phase'], ', '.join(
                    '%s %s MiB' % (name, _fmt(mib, 0)) for name, mib in
                    sorted(parts['processes'].items(),
                           key=lambda item: -item[1]))))
    return out


def write(results, path=None):
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = path or os.path.join(RESULTS_DIR, '%s.json'
                                % results['started'].replace(':', ''))
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(results, f, indent=1, sort_keys=False, default=str)
        f.write('\n')
    os.replace(tmp, path)
    return path
