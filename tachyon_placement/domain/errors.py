"""Domain failures; the API layer maps each to Placement's status/code."""


class DomainError(Exception):
    def __init__(self, message=None, **kw):
        super().__init__(message)
        self.message = message
        self.__dict__.update(kw)


class NotFound(DomainError):
    pass


class Exists(DomainError):
    pass


class InUse(DomainError):
    pass


class ConcurrentUpdate(DomainError):
    """A generation changed under us (or the caller sent a stale one)."""


class Invalid(DomainError):
    pass
