"""Plain value types the store returns and the domain reasons about."""
import dataclasses
import datetime


def from_millis(millis):
    """Engine timestamps are epoch milliseconds; the API wants datetimes."""
    if millis is None:
        return None
    return datetime.datetime.fromtimestamp(millis / 1000.0,
                                           tz=datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class ResourceClass:
    name: str
    created_at: datetime.datetime = None
    updated_at: datetime.datetime = None

    @property
    def is_custom(self):
        return self.name.startswith('CUSTOM_')


@dataclasses.dataclass(frozen=True)
class Trait:
    name: str
    created_at: datetime.datetime = None
    updated_at: datetime.datetime = None


@dataclasses.dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int
    parent_uuid: str = None
    root_uuid: str = None
    created_at: datetime.datetime = None
    updated_at: datetime.datetime = None

    @property
    def last_modified(self):
        return self.updated_at or self.created_at


@dataclasses.dataclass(frozen=True)
class Inventory:
    resource_class: str
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 2147483647
    step_size: int = 1
    allocation_ratio: float = 1.0
    used: int = 0
    created_at: datetime.datetime = None
    updated_at: datetime.datetime = None

    @property
    def capacity(self):
        """What can be allocated: (total - reserved) * allocation_ratio."""
        return (self.total - self.reserved) * self.allocation_ratio

    FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
              'allocation_ratio')

    def as_dict(self):
        return {field: getattr(self, field) for field in self.FIELDS}
