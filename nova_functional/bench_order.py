"""Where Nova's scheduler puts servers, by Nova's configuration and
Tachyon's stored weigher: the table of the weighers guide.

    nova_functional/run.sh --bench order

In Nova 34.0.0's functional framework (Tachyon's app in the placement
fixture's place): four identical hosts (host1..host4), four servers
booted one after another, for each Nova configuration below and each
Tachyon weigher (none, pack by RAM, spread by RAM); each case on fresh
services.  Prints, per case, the hosts the servers landed on.
"""
import json
import os

import test_tachyon_weigher as base

# name: (Nova's flags {group: {option: value}}, whether weight_classes
# names Tachyon's weigher)
NOVA_CONFIGS = {
    'default': ({}, False),
    'all Nova multipliers 0': ({'filter_scheduler': {
        'ram_weight_multiplier': 0.0, 'cpu_weight_multiplier': 0.0,
        'disk_weight_multiplier': 0.0, 'io_ops_weight_multiplier': 0.0,
        'hypervisor_version_weight_multiplier': 0.0,
        'build_failure_weight_multiplier': 0.0}}, False),
    'max_placement_results = 1': ({'scheduler': {
        'max_placement_results': 1}}, False),
    'default + TachyonWeigher': ({}, True),
    'default + TachyonWeigher, multiplier 10': ({'tachyon': {
        'weight_multiplier': 10.0}}, True),
}
TACHYON_WEIGHERS = {
    'none': None,
    'pack by RAM': base.PACK_RAM,
    'spread by RAM': base.SPREAD_RAM,
}


class _Case:
    """One case (NOVA, WEIGHER), mixed into Tachyon's test base."""
    NOVA = None
    WEIGHER = None

    def setUp(self):
        flags, self.WITH_TACHYON = NOVA_CONFIGS[self.NOVA]
        for group, values in flags.items():
            for name, value in values.items():
                self.flags(**{name: value, 'group': group})
        super().setUp()

    def test_landing(self):
        document = TACHYON_WEIGHERS[self.WEIGHER]
        if document is not None:
            self.store_weigher('bench', document)
        landed = self.boot()
        with open(os.environ['ORDER_RESULTS'], 'a') as out:
            out.write(json.dumps({'nova': self.NOVA, 'weigher': self.WEIGHER,
                                  'landed': landed}) + '\n')


for _nova in NOVA_CONFIGS:
    for _weigher in TACHYON_WEIGHERS:
        _name = 'Case_%d_%d' % (list(NOVA_CONFIGS).index(_nova),
                                list(TACHYON_WEIGHERS).index(_weigher))
        globals()[_name] = type(_name, (_Case, base._Base), {
            'NOVA': _nova, 'WEIGHER': _weigher})


def table(results_file):
    rows = {}
    with open(results_file) as results:
        for line in results:
            case = json.loads(line)
            rows.setdefault(case['nova'], {})[case['weigher']] = ' '.join(
                host.replace('host', 'h') for host in case['landed'])
    lines = ['| Nova configuration | %s |' % ' | '.join(TACHYON_WEIGHERS),
             '|---|%s' % ('---|' * len(TACHYON_WEIGHERS))]
    for nova in NOVA_CONFIGS:
        if nova in rows:
            lines.append('| %s | %s |' % (nova, ' | '.join(
                rows[nova].get(weigher, '') for weigher in TACHYON_WEIGHERS)))
    return '\n'.join(lines)


if __name__ == '__main__':
    import sys
    print(table(sys.argv[1]))
