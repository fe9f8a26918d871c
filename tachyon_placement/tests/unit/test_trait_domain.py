import collections

import pytest

from tachyon_placement.domain import errors
from tachyon_placement.domain import traits

T = collections.namedtuple('T', 'name')


def names(found):
    return [trait.name for trait in found]


def test_is_custom():
    assert traits.is_custom('CUSTOM_FOO')
    assert not traits.is_custom('HW_CPU_X86_SSE')
    assert not traits.is_custom('CUSTOMFOO')


@pytest.mark.parametrize('value, expected', [
    ('in:A,B', (['A', 'B'], None)),
    ('in:A', (['A'], None)),
    ('in:', ([''], None)),
    ('startswith:CUSTOM_', (None, 'CUSTOM_')),
    ('startswith:', (None, '')),
    # The value keeps any further ':'.
    ('startswith:A:B', (None, 'A:B')),
    # An unknown operator filters nothing, as in Placement.
    ('foo:bar', (None, None)),
])
def test_parse_name(value, expected):
    assert traits.parse_name(value) == expected


@pytest.mark.parametrize('value', ['in_abc', '', 'CUSTOM_A'])
def test_parse_name_needs_an_operator(value):
    with pytest.raises(errors.Invalid):
        traits.parse_name(value)


@pytest.mark.parametrize('value, expected', [
    ('true', True), ('false', False), ('TRUE', True), ('False', False)])
def test_parse_associated(value, expected):
    assert traits.parse_associated(value) is expected


@pytest.mark.parametrize('value', ['xyz', '', '1', 'yes'])
def test_parse_associated_rejects(value):
    with pytest.raises(errors.Invalid):
        traits.parse_associated(value)


@pytest.mark.parametrize('prefix, name, expected', [
    ('CUSTOM_', 'CUSTOM_A', True),
    ('CUSTOM_TRAIT', 'CUSTOM_TRAIT_1', True),
    ('CUSTOM_TRAIT', 'CUSTOM_ANOTHER_TRAIT', False),
    ('', 'ANYTHING', True),
    # SQL LIKE: case-insensitive, '_' is any one character, '%' any run.
    ('custom_', 'CUSTOM_A', True),
    ('HW_CPU', 'HWXCPU_FOO', True),
    ('HW_CPU', 'HW_CP', False),
    ('%SSE', 'HW_CPU_X86_SSE42', True),
    ('%SSE', 'HW_CPU_X86_AVX', False),
    # Regex metacharacters are literal.
    ('A.B', 'AXB', False),
    ('A.B', 'A.BC', True),
    ('(', '(X', True),
])
def test_like_prefix(prefix, name, expected):
    assert traits.like_prefix(prefix)(name) is expected


def test_select_applies_name_filters():
    all_traits = [T('CUSTOM_TRAIT_1'), T('CUSTOM_TRAIT_2'),
                  T('CUSTOM_ANOTHER_TRAIT'), T('HW_CPU_X86_SSE')]
    assert names(traits.select(all_traits, traits.TraitFilter())) == names(
        all_traits)
    assert names(traits.select(all_traits, traits.TraitFilter(
        prefix='CUSTOM_TRAIT'))) == ['CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2']
    assert names(traits.select(all_traits, traits.TraitFilter(
        name_in=['HW_CPU_X86_SSE', 'NOPE']))) == ['HW_CPU_X86_SSE']
    assert names(traits.select(all_traits, traits.TraitFilter(
        name_in=['CUSTOM_TRAIT_1', 'HW_CPU_X86_SSE'],
        prefix='CUSTOM_'))) == ['CUSTOM_TRAIT_1']
    # name_in is exact (case-sensitive), as an SQL IN on Placement's
    # default databases.
    assert traits.select(all_traits, traits.TraitFilter(
        name_in=['custom_trait_1'])) == []


def test_unique_keeps_first_occurrence_order():
    assert traits.unique(['B', 'A', 'B', 'C', 'A']) == ['B', 'A', 'C']
    assert traits.unique([]) == []
