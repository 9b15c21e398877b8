"""Errors raised by the partition log, each carrying its Kafka error code
(``Errors.java``) so a handler can answer with it directly."""
from __future__ import annotations

from kcore.protocol.errors import ErrorCode


class LogError(Exception):
    """Base of the log's errors; ``error_code`` is Kafka's."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptRecordError(LogError):
    """A produced batch failed validation; nothing was written.

    ``reason`` is 'size', 'magic', 'crc' or 'count' (as from the native
    validator) or 'offset' (offsets that go backwards on a replica append).
    Kafka answers CRC and framing failures with CORRUPT_MESSAGE and a wrong
    record count or offset range with INVALID_RECORD."""

    def __init__(self, reason: str, message: str | None = None, position: int = 0):
        self.reason = reason
        self.position = position
        self.error_code = (ErrorCode.INVALID_RECORD if reason in ("count", "offset")
                           else ErrorCode.CORRUPT_MESSAGE)
        super().__init__(message or f"corrupt record batch at position {position}: {reason}")


class OffsetOutOfRangeError(LogError):
    """A read or lookup offset outside [log_start_offset, log_end_offset]."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes (or than a whole segment)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class KafkaStorageError(LogError):
    """The log's files cannot be read or written (I/O error, corrupt data
    found where it was trusted). The partition goes offline in Kafka."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class SyncFailedError(KafkaStorageError):
    """An fsync failed: data past the log's synced offset is not trusted."""

    def __init__(self, message: str, error_number: int):
        super().__init__(message)
        self.errno = error_number
