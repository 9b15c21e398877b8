"""Exceptions raised by kcore.client.

``KafkaError`` carries a Kafka error code (kcore.protocol.errors.ErrorCode)
and the broker's message when it sent one; ``str()`` reads
``UNKNOWN_TOPIC_OR_PARTITION: <message>``. Codes the Java client treats as
retriable (``RetriableException`` subclasses in Kafka's ``Errors.java``) are
listed in ``RETRIABLE_ERRORS``.
"""
from __future__ import annotations

from kcore.protocol.errors import ErrorCode

__all__ = ["ClientError", "KafkaError", "BrokerConnectionError", "RETRIABLE_ERRORS",
           "error_name", "raise_for_error"]

RETRIABLE_ERRORS = frozenset({
    ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.OFFSET_NOT_AVAILABLE,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED,
    ErrorCode.UNKNOWN_TOPIC_ID,
})


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


class ClientError(Exception):
    """Base of every kcore.client exception."""


class BrokerConnectionError(ClientError):
    """The connection to a broker failed, closed or timed out."""


class KafkaError(ClientError):
    """A broker answered with a non-zero error code."""

    def __init__(self, error_code: int, message: str | None = None,
                 context: str | None = None) -> None:
        self.error_code = int(error_code)
        self.error_message = message
        self.context = context
        text = error_name(self.error_code)
        if context:
            text = f"{context}: {text}"
        if message:
            text = f"{text}: {message}"
        super().__init__(text)

    @property
    def name(self) -> str:
        return error_name(self.error_code)

    @property
    def retriable(self) -> bool:
        return self.error_code in RETRIABLE_ERRORS


def raise_for_error(error_code: int, message: str | None = None,
                    context: str | None = None) -> None:
    if error_code:
        raise KafkaError(error_code, message, context)
