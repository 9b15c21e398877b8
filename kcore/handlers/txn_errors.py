"""What the transactional APIs share: the error a version can read.

PRODUCER_FENCED (90) is newer than the transactional APIs; clients that
send an older version know only INVALID_PRODUCER_EPOCH (47) for it, so
that is what they get (Kafka's KafkaApis does the same per API: below
InitProducerId v4, AddPartitionsToTxn v2, AddOffsetsToTxn v2, EndTxn v2,
TxnOffsetCommit v2)."""
from __future__ import annotations

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode

FIRST_PRODUCER_FENCED_VERSION: dict[ApiKey, int] = {
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
    ApiKey.TXN_OFFSET_COMMIT: 2,
}


def for_version(api_key: ApiKey, version: int, error_code: int) -> int:
    if error_code == ErrorCode.PRODUCER_FENCED and version < FIRST_PRODUCER_FENCED_VERSION[api_key]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error_code
