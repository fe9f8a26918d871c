"""Print the upstream gabbi conformance table at the end of a run."""
import json

# Test data, not tests: the sysfs trees of tests/fixtures/sysfs link
# directories to each other as Linux does (a VF's physfn, a PF's virtfn<N>),
# and pytest would follow those cycles for ever.
collect_ignore = ['tachyon_placement/tests/fixtures']


def pytest_terminal_summary(terminalreporter):
    try:
        from tachyon_placement.tests.functional import test_upstream_gabbits
    except ImportError:
        return
    results = test_upstream_gabbits.RESULTS
    if not results:
        return
    write = terminalreporter.write_line
    write('')
    write('Upstream Placement gabbi files (per file: passed/total):')
    for name in sorted(results):
        row = results[name]
        mark = 'ok  ' if not row['failed'] and not row['skipped'] else 'FAIL'
        write('  %s %-45s %4d/%-4d' % (mark, name, row['passed'],
                                       row['total']))
    passed = sum(row['passed'] for row in results.values())
    total = sum(row['total'] for row in results.values())
    write('Upstream gabbi tests passed: %d / %d run (of %d upstream)' % (
        passed, total, test_upstream_gabbits.UPSTREAM_TOTAL))
    with open('upstream-gabbi-results.json', 'w') as out:
        json.dump(results, out, indent=1, sort_keys=True)
