"""Trait rules: the GET /traits filters, custom names, set differences.

Pure functions, no I/O.  Placement filters ``name=startswith:`` with an SQL
``LIKE 'prefix%'`` (case-insensitive for ASCII on its databases, ``_`` and
``%`` are wildcards) and ``name=in:`` with an exact ``IN``; these helpers
reproduce that so clients see the same lists.
"""
import dataclasses
import re

from tachyon_placement.domain import errors

CUSTOM_PREFIX = 'CUSTOM_'


def is_custom(name):
    return name.startswith(CUSTOM_PREFIX)


@dataclasses.dataclass
class TraitFilter:
    """What GET /traits can filter on; None means "no such filter"."""
    name_in: list = None
    prefix: str = None
    associated: bool = None

    def matches(self, name):
        """The name filters (``associated`` needs the graph)."""
        if self.name_in is not None and name not in self.name_in:
            return False
        if self.prefix is not None and not like_prefix(self.prefix)(name):
            return False
        return True


def parse_name(value):
    """``in:A,B`` or ``startswith:P`` -> (name_in, prefix).

    Any other operator filters nothing, as in Placement.  A value without
    ``:`` is Invalid.
    """
    op, sep, operand = value.partition(':')
    if not sep:
        raise errors.Invalid(value=value)
    if op == 'in':
        return operand.split(','), None
    if op == 'startswith':
        return None, operand
    return None, None


def parse_associated(value):
    """'true'/'false' in any case -> bool; anything else is Invalid."""
    lowered = value.lower()
    if lowered not in ('true', 'false'):
        raise errors.Invalid(value=value)
    return lowered == 'true'


def like_prefix(prefix):
    """A predicate for names matching SQL ``LIKE '<prefix>%'``."""
    parts = []
    for char in prefix:
        if char == '%':
            parts.append('.*')
        elif char == '_':
            parts.append('.')
        else:
            parts.append(re.escape(char))
    pattern = re.compile(''.join(parts), re.IGNORECASE | re.DOTALL)
    return lambda name: pattern.match(name) is not None


def select(traits, trait_filter):
    """The traits (objects with ``.name``) the name filters keep."""
    return [trait for trait in traits if trait_filter.matches(trait.name)]


def unique(names):
    """Names without repeats, first occurrence order kept."""
    return list(dict.fromkeys(names))
