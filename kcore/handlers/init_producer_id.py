"""InitProducerId (key 22): a producer id and epoch for an idempotent
producer.

A transactional id asks for transactions, which kcore does not implement
(AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit are absent
from ApiVersions). Kafka's answer for a request a broker cannot serve is
UNSUPPORTED_VERSION, and InitProducerId has no error_message to say more,
so that is the answer: the Java client and kafka-python fail the
transactional producer at once ("Unexpected error in InitProducerIdResponse:
... The version of API is not supported"); librdkafka retries it until
init_transactions' timeout and then reports it. The former answer,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, read as a permissions problem.
"""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if body.transactional_id is not None:
        return {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1,
                "error_code": ErrorCode.UNSUPPORTED_VERSION}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "producer_id": await broker.producer_ids.next_id(), "producer_epoch": 0}
