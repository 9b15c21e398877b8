"""RecordBatch v2 byte layout: the one place Python code takes it from.

Source: KIP-98 and Kafka's ``DefaultRecordBatch`` / ``DefaultRecord``,
whose constant names these are. Big-endian::

     0 baseOffset i64 | 8 batchLength i32 (bytes after it; size = +12)
    12 partitionLeaderEpoch i32 | 16 magic i8 = 2 | 17 crc u32
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16
    53 baseSequence i32 | 57 recordsCount i32 | 61 records...

    attributes: bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
    4 transactional, 5 control, 6 delete horizon (KIP-534)

    record: length varint | attributes i8 | timestampDelta varlong
    | offsetDelta varint | keyLength varint (-1 = null) | key
    | valueLength varint (-1 = null) | value | headerCount varint | headers

The CRC-32C covers attributes..end, so baseOffset and partitionLeaderEpoch
are rewritten in place without touching it. The C kernels read the same
numbers from native/batch.h; tests/unit/test_native_modules.py holds the
two to each other.
"""
from __future__ import annotations

import struct

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

# The whole header; Kafka's RECORD_BATCH_OVERHEAD.
BATCH_HEADER_SIZE = 61
# baseOffset + batchLength: the bytes before the length-counted part.
LOG_OVERHEAD = 12
CURRENT_MAGIC = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# The header fields in layout order, and their struct format.
HEADER_FIELDS = (
    "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
    "base_sequence", "records_count",
)
HEADER = struct.Struct(">qiibIhiqqqhii")
