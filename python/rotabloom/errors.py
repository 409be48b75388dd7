"""The exceptions rotabloom raises, mirroring the Rust library's error enum.

Every one derives from :class:`RotabloomError` and has a ``retryable``
attribute: True when trying the same call again later may succeed
(connection failures, timeouts, a busy or loading server, contention).
No message ever contains a password.
"""


class RotabloomError(Exception):
    """Base class of every rotabloom error."""

    retryable = False


class InvalidParameterError(RotabloomError, ValueError):
    """A setting out of range, an invalid filter name or URL, or a filter
    that would exceed the size limit. ``setting`` names the setting when
    the error is about one (``"capacity"``), else None."""

    setting = None


class NotFoundError(RotabloomError, LookupError):
    """The filter does not exist."""


class RecreatedError(RotabloomError, LookupError):
    """The filter this object opened was dropped and another created under
    its name since (sharded or not): nothing was written to either. Open
    it again to use the new filter."""


class ParameterMismatchError(RotabloomError):
    """The filter exists with other settings; rotabloom never reuses or
    overwrites it silently. ``field`` is the stored setting that differs
    (``"error_rate"``), ``stored`` its value in Redis and ``requested``
    the one asked for (both as stored: text)."""

    field = None
    stored = None
    requested = None


class KindMismatchError(RotabloomError):
    """The filter exists but is of another kind."""


class UnsupportedFormatError(RotabloomError):
    """The filter was written in a format version this library cannot read."""


class WrongTypeError(RotabloomError):
    """A key holds a Redis type the filter cannot use."""


class NotAdoptableError(RotabloomError):
    """A legacy bitmap cannot be adopted as it is: the key is missing,
    empty, saturated or not a bitmap, its shape does not fit the legacy
    parameters (``bit``, ``hashes``), or items known to be in it are
    absent. Checked before anything moves: nothing was changed. ``key`` is
    the legacy key."""

    key = None


class CorruptMetadataError(RotabloomError):
    """The filter's metadata is present but cannot be decoded."""


class MissingDataError(RotabloomError):
    """The metadata names data that is gone (evicted or deleted)."""


class ContentionError(RotabloomError):
    """The filter kept changing under the call (other processes rotating,
    expanding or re-creating it); retryable."""


class LimitReachedError(RotabloomError):
    """An expanding filter is full: it may not grow any further."""


class FullError(LimitReachedError):
    """A base or circular filter's generation holds its capacity and the
    filter refuses further writes (``when_full="error"``, the default):
    rotate it, convert it to an expanding filter, make a bigger one, or
    pass ``when_full="warn"``.

    ``answered`` holds the answers of the items the call handled before
    the generation filled: a prefix of its items, in order, written (True:
    new). Nothing from index ``len(answered)`` on was written. Empty when
    the filter was full before the call."""

    answered = None


class ReplicasTimeoutError(RotabloomError):
    """Fewer replicas than ``wait_replicas`` acknowledged a write in time;
    the write is on the primary. Retryable."""

    retryable = True


class ModuleMissingError(RotabloomError):
    """The server lacks the Redis module the filter's backend needs."""


class OutOfMemoryError(RotabloomError):
    """Redis refused a write for lack of memory (maxmemory)."""


class PermissionDeniedError(RotabloomError, PermissionError):
    """The Redis user may not run a command or touch a key (ACL)."""


class RedisConnectionError(RotabloomError, ConnectionError):
    """Redis could not be reached, or the connection broke; the filter
    object connects again on its next call."""


class RedisError(RotabloomError):
    """Any other error reply from Redis, or a reply rotabloom did not
    expect."""


class AlreadyExistsError(RotabloomError):
    """A filter of that name exists already, and the call never overwrites
    one (a restore). Nothing was written."""


class BadDumpError(RotabloomError, ValueError):
    """A dump file is not one rotabloom wrote or can read."""


class FileAccessError(RotabloomError, OSError):
    """Reading or writing a local file (a dump) failed."""


class RestoreCancelledError(RotabloomError):
    """A restore was cancelled before it published the filter: nothing was
    restored, and the blocks it had written are deleted."""


class RestoreExpiredError(RotabloomError):
    """Blocks a restore had written vanished before it could publish the
    filter (they expired after a pause longer than its lease, or were
    evicted): nothing was restored."""


class InternalError(RotabloomError):
    """rotabloom broke one of its own invariants: a bug, never a problem of
    the data in Redis. Please report it."""


class PartialError(RotabloomError):
    """A batch partly answered: a sharded filter's batch of which some
    shards failed (one full, missing, out of memory, its reply lost) while
    the others answered, or a long batch whose later step failed. Each
    item and each shard's step is atomic; the batch as a whole is not.

    ``answers`` holds every item's answer in input order, None for the
    items not answered; ``refused`` the indices surely not written (send
    them again once the cause is gone); ``unknown`` those whose reply was
    lost (written or not); ``failures`` one ``(shard, indices, fate,
    error_class, message)`` tuple per failed shard (shard 0 for a filter
    that is not sharded; ``fate`` is ``"refused"`` or ``"unknown"``).
    ``retryable`` when a failed shard's error is."""

    answers = None
    refused = None
    unknown = None
    failures = None


__all__ = [name for name, value in dict(globals()).items() if isinstance(value, type)]
