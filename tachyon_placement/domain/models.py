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


# Slots, and the capacity computed once: the capacity test runs for every
# provider of a listing (30,000 of them at 10,000 hosts), and attribute
# reads through a __dict__ and a property made it most of such a request.
@dataclasses.dataclass(frozen=True, slots=True)
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
    # What can be allocated: (total - reserved) * allocation_ratio.
    capacity: float = dataclasses.field(init=False, repr=False,
                                        compare=False)

    def __post_init__(self):
        try:
            capacity = (self.total - self.reserved) * self.allocation_ratio
        except TypeError:
            # A request's record not yet checked (domain/inventory.py
            # make_inventory): its checks refuse it, with Placement's
            # message.
            capacity = None
        object.__setattr__(self, 'capacity', capacity)

    FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
              'allocation_ratio')

    def as_dict(self):
        return {field: getattr(self, field) for field in self.FIELDS}
