"""Counts of one suite's subunit stream (stestr run --subunit): passed,
failed, skipped; the failures' ids and the end of their tracebacks.
Exit status 1 when a test failed or none ran."""
import argparse
import json
import sys

import subunit
import testtools


class _Counts(testtools.StreamResult):
    """Each test's last status, and its traceback or skip reason."""

    def __init__(self):
        super().__init__()
        self.found = {}
        self.details = {}

    def status(self, test_id=None, test_status=None, file_name=None,
               file_bytes=None, **kwargs):
        if test_id is None:
            return
        if test_status not in (None, 'inprogress', 'exists'):
            self.found[test_id] = test_status
        if file_name in ('traceback', 'reason') and file_bytes:
            self.details.setdefault(test_id, bytearray()).extend(file_bytes)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('stream')
    parser.add_argument('--suite', required=True)
    parser.add_argument('--target', required=True)
    parser.add_argument('--seconds', type=int, default=0)
    parser.add_argument('--results')
    args = parser.parse_args(argv)
    counts = _Counts()
    with open(args.stream, 'rb') as stream:
        case = subunit.ByteStreamToStreamResult(stream,
                                                non_subunit_name='stdout')
        counts.startTestRun()
        case.run(counts)
        counts.stopTestRun()
    found = counts.found
    passed = sum(1 for s in found.values() if s in ('success', 'xfail'))
    failed = sorted(t for t, s in found.items()
                    if s in ('fail', 'uxsuccess'))
    skipped = sum(1 for s in found.values() if s == 'skip')
    line = {'suite': args.suite, 'target': args.target, 'tests': len(found),
            'passed': passed, 'failed': len(failed), 'skipped': skipped,
            'seconds': args.seconds}
    print('nova-functional: %(suite)s on %(target)s: %(tests)d tests, '
          '%(passed)d passed, %(failed)d failed, %(skipped)d skipped '
          '(%(seconds)d s)' % line)
    for test_id in failed:
        print('  FAILED %s' % test_id)
        text = bytes(counts.details.get(test_id, b'')).decode(
            'utf-8', 'replace')
        for detail in text.strip().splitlines()[-15:]:
            print('    ' + detail)
    if args.results:
        with open(args.results, 'a') as out:
            out.write(json.dumps(line) + '\n')
    return 1 if failed or not found else 0


if __name__ == '__main__':
    sys.exit(main())
