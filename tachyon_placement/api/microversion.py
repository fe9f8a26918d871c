"""Microversions: the list Tachyon serves and what each one switches on.

Every behaviour that depends on the microversion is named once in
``FEATURES`` and tested with ``req.has('feature')``; a handler that only
exists from some version on is declared with ``@handler(min_version=...)``.
"""
import microversion_parse

SERVICE_TYPE = 'placement'
MICROVERSION_ENVIRON = '%s.microversion' % SERVICE_TYPE

VERSIONS = ['1.%d' % minor for minor in range(0, 40)]
MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]

# Tachyon's own routes (under TACHYON_PREFIX) have a version of their own,
# ``OpenStack-API-Version: tachyon 1.0``: they never claim a Placement
# microversion, which Placement may give a meaning one day.
TACHYON_PREFIX = '/tachyon'
TACHYON_SERVICE_TYPE = 'tachyon'
TACHYON_ENVIRON = '%s.microversion' % TACHYON_SERVICE_TYPE
TACHYON_VERSIONS = ['1.0']


def is_tachyon_path(path):
    return path == TACHYON_PREFIX or path.startswith(TACHYON_PREFIX + '/')


# feature name -> first microversion that has it
FEATURES = {
    'aggregates': (1, 1),
    'resource_classes': (1, 2),
    'member_of': (1, 3),
    'resources_filter': (1, 4),
    'delete_all_inventories': (1, 5),
    'traits': (1, 6),
    'put_resource_class_bodiless': (1, 7),
    'consumer_project_user': (1, 8),
    'usages': (1, 9),
    'allocation_candidates': (1, 10),
    'allocations_link': (1, 11),
    'allocations_dict': (1, 12),
    'post_allocations': (1, 13),
    'provider_tree': (1, 14),
    'last_modified': (1, 15),
    'candidates_limit': (1, 16),
    'candidates_required': (1, 17),
    'providers_required': (1, 18),
    'aggregates_generation': (1, 19),
    'create_returns_provider': (1, 20),
    'candidates_member_of': (1, 21),
    'forbidden_traits': (1, 22),
    'error_codes': (1, 23),
    'multi_member_of': (1, 24),
    'granular': (1, 25),
    'reserved_equals_total': (1, 26),
    'all_inventories_in_summaries': (1, 27),
    'consumer_generation': (1, 28),
    'nested_candidates': (1, 29),
    'reshaper': (1, 30),
    'candidates_in_tree': (1, 31),
    'forbidden_aggregates': (1, 32),
    'string_suffixes': (1, 33),
    'mappings': (1, 34),
    'root_required': (1, 35),
    'same_subtree': (1, 36),
    'reparenting': (1, 37),
    'consumer_types': (1, 38),
    'any_traits': (1, 39),
}


def parse(version_string):
    return microversion_parse.parse_version_string(version_string)


def latest():
    """Placement's latest microversion, as negotiation would give it (a
    Tachyon route that takes a Placement query parses it at this one)."""
    version = parse(MAX_VERSION)
    version.max_version = parse(MAX_VERSION)
    version.min_version = parse(MIN_VERSION)
    return version


def has(version, feature):
    return version.matches(FEATURES[feature])
