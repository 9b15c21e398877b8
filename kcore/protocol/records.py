"""RecordBatch v2 (magic 2): a read-only view, record decoding and a builder.

Byte layout: kcore/_native/batch_layout.py (KIP-98; Kafka
`DefaultRecordBatch` / `DefaultRecord`), the one place it is written.
Record varints are zigzag-encoded (protobuf style). A control batch
(transaction marker) holds one record whose key is ``i16 version=0, i16 type``
(ABORT 0, COMMIT 1) and whose value is ``i16 version=0, i32 coordinatorEpoch``
(Kafka `ControlRecordType`, `EndTransactionMarker`). With LogAppendTime every
record's timestamp reads as the batch's maxTimestamp.

This module is sans-io pure Python over the native header/CRC/varint kernels
(`kcore._native.records`). It serves the CLI, dump-log, compaction and
compression.type conversion; the broker's produce path never decodes records.
"""

from __future__ import annotations

import enum
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from kcore._native.batch_layout import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CURRENT_MAGIC,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_FIELDS,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from kcore._native.records import (
    CorruptBatchError,
    count_records,
    crc32c,
    decode_varint,
    encode_varint,
    parse_batch_header,
)
from kcore.protocol.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionType,
    DecompressedSizeError,
    UnsupportedCodecError,
    compress,
    decompress,
)
from kcore.protocol.constants import INT32_MAX, NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "CorruptBatchError",
    "InvalidRecordError",
    "RecordsTooLargeError",
    "TimestampType",
    "ControlType",
    "Record",
    "RecordBatch",
    "iter_batches",
    "iter_records",
    "build_batch",
    "build_control_batch",
    "recompress_batch",
]

NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Header fields after the CRC, packed in one call by the builder.
_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")
_HEADER_BEFORE_CRC = struct.Struct(">qiib")
_CRC = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_CONTROL_RECORD_VERSION = 0


class InvalidRecordError(CorruptBatchError):
    """A batch whose records section cannot be decoded (Kafka's InvalidRecordException,
    which DefaultRecord throws for a record it cannot read).

    A CorruptBatchError with reason 'records', so one except clause covers both.
    """

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__("records", position, message)


class RecordsTooLargeError(InvalidRecordError):
    """The batch's records inflate past the decompression limit
    (compression.py, ``DecompressedSizeError``); a InvalidRecordError too,
    so readers that skip unreadable batches skip it as well."""

    def __init__(self, message: str, max_size: int, position: int = 0) -> None:
        super().__init__(message, position)
        self.max_size = max_size


class TimestampType(enum.IntEnum):
    """Attributes bit 3: who set the record timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        return "CreateTime" if self is TimestampType.CREATE_TIME else "LogAppendTime"


class ControlType(enum.IntEnum):
    """Control record types (Kafka `ControlRecordType`)."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One record. Decoded records carry absolute offset and timestamp.

    As builder input ``offset=None`` means "the next offset" (base_offset for
    the first record) and ``timestamp=None`` means the build time in ms.
    Header keys are text; header values are bytes or None.
    """

    offset: int | None = None
    timestamp: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


# ------------------------------------------------------------------ reading

class RecordBatch:
    """Read-only view of one v2 batch at ``position`` in ``buffer``.

    Header fields are parsed once at construction; ``records()`` and
    ``stream()`` decode (and decompress, to at most ``max_size`` bytes:
    compression.py) on every call. The view keeps a reference to the
    buffer: do not resize a bytearray under it. Immutable, so safe to share.
    """

    __slots__ = ("_view", "position", *HEADER_FIELDS)
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        view = memoryview(buffer).cast("B")
        if len(view) - position < BATCH_HEADER_SIZE:
            raise CorruptBatchError(
                "size", position, f"{len(view) - position} bytes at position {position} are "
                f"less than a {BATCH_HEADER_SIZE}-byte batch header")
        header = parse_batch_header(view, position)
        for name in HEADER_FIELDS:
            setattr(self, name, getattr(header, name))
        if self.magic != CURRENT_MAGIC:
            raise CorruptBatchError(
                "magic", position, f"magic {self.magic} at position {position}; only v2 is read")
        end = position + LOG_OVERHEAD + self.batch_length
        if self.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or end > len(view):
            raise CorruptBatchError(
                "size", position, f"batch length {self.batch_length} at position {position} "
                f"does not fit the {len(view) - position} bytes available")
        self._view = view[position:end]
        self.position = position

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; wraps past int32 max as Kafka does."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def compression(self) -> CompressionType:
        """The codec; UnsupportedCodecError for the unassigned ids 5-7."""
        return _codec(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when bit 6 is set, baseTimestamp holds the delete horizon."""
        return self.base_timestamp if self.has_delete_horizon else None

    def to_bytes(self) -> bytes:
        return self._view.tobytes()

    def compute_crc(self) -> int:
        return crc32c(self._view[ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        """True when the stored CRC-32C matches bytes 21..end."""
        return self.compute_crc() == self.crc

    def records(self, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> list[Record]:
        """Decode every record; LogAppendTime batches report maxTimestamp
        per record. RecordsTooLargeError when the records inflate past
        ``max_size`` bytes."""
        return list(self.stream(max_size))

    def stream(self, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
        """The records one at a time (Kafka's ``streamingIterator``): the
        section is decompressed once, to at most ``max_size`` bytes, and
        each record decoded when it is asked for, so a reader that wants a
        few of millions of small records holds a few."""
        records = self._iter_decoded(max_size)
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            return (_with_timestamp(record, self.max_timestamp) for record in records)
        return records

    def __iter__(self) -> Iterator[Record]:
        return self.stream()

    @property
    def control_type(self) -> ControlType:
        """ABORT or COMMIT, from the control record's key (control batches only)."""
        key, _ = self._control_record()
        if key is None or len(key) < _CONTROL_KEY.size:
            raise InvalidRecordError("control record key is shorter than version + type")
        _version, control_type = _CONTROL_KEY.unpack_from(key)
        try:
            return ControlType(control_type)
        except ValueError:
            raise InvalidRecordError(f"unknown control record type {control_type}") from None

    @property
    def coordinator_epoch(self) -> int:
        """The transaction coordinator's epoch from the marker value (control batches only)."""
        _, value = self._control_record()
        if value is None or len(value) < _CONTROL_VALUE.size:
            raise InvalidRecordError("control record value is shorter than version + epoch")
        return _CONTROL_VALUE.unpack_from(value)[1]

    def _control_record(self) -> tuple[bytes | None, bytes | None]:
        if not self.is_control:
            raise ValueError(f"batch at offset {self.base_offset} is not a control batch")
        records = self._decode_records()
        if not records:
            raise InvalidRecordError("control batch without a record")
        return records[0].key, records[0].value

    def _records_section(self, max_size: int) -> memoryview | bytes:
        section = self._view[BATCH_HEADER_SIZE:]
        codec = self.attributes & COMPRESSION_CODEC_MASK
        if codec == CompressionType.NONE:
            return section
        try:
            return decompress(codec, section, max_size)
        except DecompressedSizeError as exc:
            raise RecordsTooLargeError(
                f"batch at offset {self.base_offset} (position {self.position}): "
                f"{self.records_count} records in {len(section)} compressed bytes: {exc}",
                max_size, self.position) from exc
        except ValueError as exc:
            raise InvalidRecordError(
                f"batch at offset {self.base_offset} (position {self.position}): cannot "
                f"decompress records: {exc}", self.position) from exc

    def _decode_records(self, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> list[Record]:
        return list(self._iter_decoded(max_size))

    def _iter_decoded(self, max_size: int) -> Iterator[Record]:
        if self.records_count < 0:
            raise InvalidRecordError(
                f"negative records count {self.records_count}", self.position)
        if self.records_count == 0:
            return
        section = self._records_section(max_size)
        position = 0
        for index in range(self.records_count):
            try:
                record, position = _decode_record(
                    section, position, self.base_offset, self.base_timestamp)
            except (IndexError, ValueError, UnicodeDecodeError) as exc:
                raise InvalidRecordError(
                    f"batch at offset {self.base_offset} (position {self.position}): record "
                    f"{index} of {self.records_count} is malformed: {exc}",
                    self.position) from exc
            yield record
        if position != len(section):
            raise InvalidRecordError(
                f"batch at offset {self.base_offset} (position {self.position}): "
                f"{len(section) - position} bytes left after {self.records_count} records",
                self.position)

    def _checked_section(self, max_size: int) -> memoryview | bytes:
        """The records section, decompressed (to at most ``max_size``
        bytes) and walked natively: its records must be well formed and
        exactly ``records_count`` (Kafka: "Incorrect declared batch size")."""
        section = self._records_section(max_size)
        try:
            count = count_records(section)
        except ValueError as exc:
            raise InvalidRecordError(f"batch at offset {self.base_offset}: {exc}",
                                     self.position) from None
        if count != self.records_count:
            raise InvalidRecordError(
                f"batch at offset {self.base_offset} declares {self.records_count} records "
                f"but holds {count}", self.position)
        return section

    def __repr__(self) -> str:
        return (f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"count={self.records_count}, codec={self.compression.kafka_name}, "
                f"size={self.size_in_bytes})")


def _codec(codec: int) -> CompressionType:
    try:
        return CompressionType(codec)
    except ValueError:
        raise UnsupportedCodecError(codec) from None


def _increment_sequence(sequence: int, increment: int) -> int:
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _with_timestamp(record: Record, timestamp: int) -> Record:
    return Record(record.offset, timestamp, record.key, record.value, record.headers,
                  record.attributes)


def _decode_record(section, position: int, base_offset: int,
                   base_timestamp: int) -> tuple[Record, int]:
    length, position = decode_varint(section, position)
    end = position + length
    if length < 1 or end > len(section):
        raise InvalidRecordError(
            f"record length {length} at {position} overruns the {len(section)}-byte section")
    attributes = section[position]
    timestamp_delta, position = decode_varint(section, position + 1)
    offset_delta, position = decode_varint(section, position)
    key, position = _read_nullable_bytes(section, position, end)
    value, position = _read_nullable_bytes(section, position, end)
    header_count, position = decode_varint(section, position)
    if header_count < 0:
        raise InvalidRecordError(f"negative header count {header_count}")
    headers = []
    for _ in range(header_count):
        header_key, position = _read_nullable_bytes(section, position, end)
        if header_key is None:
            raise InvalidRecordError("null header key")
        header_value, position = _read_nullable_bytes(section, position, end)
        headers.append((header_key.decode("utf-8"), header_value))
    if position != end:
        raise InvalidRecordError(
            f"record declares {length} bytes but its fields end {position - end:+d} bytes off")
    record = Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value,
                    headers, attributes)
    return record, end


def _read_nullable_bytes(section, position: int, end: int) -> tuple[bytes | None, int]:
    length, position = decode_varint(section, position)
    if length < 0:
        if length != -1:
            raise InvalidRecordError(f"invalid length {length}")
        return None, position
    if position + length > end:
        raise InvalidRecordError(f"field of {length} bytes at {position} overruns its record")
    return bytes(section[position:position + length]), position + length


def iter_batches(buffer: bytes | bytearray | memoryview, position: int = 0) -> Iterator[RecordBatch]:
    """Yield each whole batch in concatenated batches (a segment, a Fetch response).

    Stops without error at a trailing partial batch (Fetch responses may end
    with one, KIP-74; a torn segment tail looks the same). A complete header
    with an impossible length or magic raises CorruptBatchError.
    """
    view = memoryview(buffer).cast("B")
    end = len(view)
    while end - position >= BATCH_HEADER_SIZE:
        batch_length = int.from_bytes(view[position + LENGTH_OFFSET:position + LENGTH_OFFSET + 4], "big",
                                      signed=True)
        if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptBatchError(
                "size", position, f"batch length {batch_length} at position {position} is "
                f"shorter than a batch header")
        if position + LOG_OVERHEAD + batch_length > end:
            return
        batch = RecordBatch(view, position)
        yield batch
        position += batch.size_in_bytes


def iter_records(buffer: bytes | bytearray | memoryview, *,
                 include_control: bool = False) -> Iterator[Record]:
    """Yield the records of every whole batch in ``buffer``, control markers skipped by default."""
    for batch in iter_batches(buffer):
        if batch.is_control and not include_control:
            continue
        yield from batch.records()


# ----------------------------------------------------------------- building

def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int = 0,
    codec: int = CompressionType.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = TimestampType.CREATE_TIME,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
) -> bytearray:
    """Encode ``records`` as one v2 batch with its CRC-32C; returns the batch bytes.

    Record offsets that are None follow the previous one (the first is
    ``base_offset``); explicit offsets must increase and not precede
    ``base_offset`` (compacted batches keep their gaps). ``base_timestamp``
    defaults to the first record's timestamp, ``max_timestamp`` to the
    largest record timestamp, ``last_offset_delta`` to the last record's.
    """
    return _build(
        list(records), base_offset=base_offset, codec=codec, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence,
        is_transactional=is_transactional, is_control=False,
        partition_leader_epoch=partition_leader_epoch, timestamp_type=timestamp_type,
        base_timestamp=base_timestamp, max_timestamp=max_timestamp,
        last_offset_delta=last_offset_delta)


def build_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp: int | None = None,
) -> bytearray:
    """Encode a transaction marker (COMMIT or ABORT) for one producer."""
    key = _CONTROL_KEY.pack(_CONTROL_RECORD_VERSION, ControlType(control_type))
    value = _CONTROL_VALUE.pack(_CONTROL_RECORD_VERSION, coordinator_epoch)
    record = Record(offset=base_offset, timestamp=timestamp, key=key, value=value)
    return _build(
        [record], base_offset=base_offset, codec=CompressionType.NONE, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE, is_transactional=True,
        is_control=True, partition_leader_epoch=partition_leader_epoch,
        timestamp_type=TimestampType.CREATE_TIME, base_timestamp=None, max_timestamp=None,
        last_offset_delta=None)


def recompress_batch(batch_bytes: bytes | bytearray | memoryview, codec: int,
                     level: int | None = None,
                     max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytearray:
    """Rewrite one batch with ``codec`` (topic compression.type) at
    ``level`` (its compression.<codec>.level; None: the codec's default);
    its records may inflate to ``max_size`` bytes (RecordsTooLargeError).

    Offsets, timestamps, producer fields, leader epoch and flags are kept:
    the records are copied byte for byte (their deltas stay valid), once
    the native walk found them well formed and as many as the header says,
    so no Python object is made per record. Control and empty batches carry
    no compressible records (Kafka writes them uncompressed) and come back
    unchanged, as does a batch already in ``codec``.
    """
    batch = RecordBatch(batch_bytes)
    codec = _codec(codec)
    if batch.is_control or batch.records_count == 0 or batch.compression == codec:
        return bytearray(batch.to_bytes())
    section = batch._checked_section(max_size)
    if codec != CompressionType.NONE:
        section = compress(codec, section, level)
    attributes = (codec | (batch.attributes & TIMESTAMP_TYPE_MASK)
                  | (batch.attributes & TRANSACTIONAL_FLAG_MASK)
                  | (batch.attributes & DELETE_HORIZON_FLAG_MASK))
    return _assemble(section, attributes, base_offset=batch.base_offset,
                     partition_leader_epoch=batch.partition_leader_epoch,
                     last_offset_delta=batch.last_offset_delta,
                     base_timestamp=batch.base_timestamp, max_timestamp=batch.max_timestamp,
                     producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                     base_sequence=batch.base_sequence, records_count=batch.records_count)


def _build(records: list[Record], *, base_offset: int, codec: int, producer_id: int,
           producer_epoch: int, base_sequence: int, is_transactional: bool, is_control: bool,
           partition_leader_epoch: int, timestamp_type: int, base_timestamp: int | None,
           max_timestamp: int | None, last_offset_delta: int | None,
           delete_horizon: bool = False, level: int | None = None) -> bytearray:
    if not records:
        raise ValueError("a batch needs at least one record")
    codec = _codec(codec)
    now_ms = int(time.time() * 1000)
    offsets, timestamps = _resolve_offsets_and_timestamps(records, base_offset, now_ms)
    if base_timestamp is None:
        base_timestamp = timestamps[0]
    if max_timestamp is None:
        max_timestamp = max(timestamps)
    records_last_delta = offsets[-1] - base_offset
    if last_offset_delta is None:
        last_offset_delta = records_last_delta
    elif last_offset_delta < records_last_delta:
        raise ValueError(f"last_offset_delta {last_offset_delta} is before the last record "
                         f"(delta {records_last_delta})")

    encoded = bytearray()
    for record, offset, timestamp in zip(records, offsets, timestamps):
        _encode_record(encoded, record, offset - base_offset, timestamp - base_timestamp)
    section = compress(codec, encoded, level) if codec != CompressionType.NONE else encoded

    attributes = (codec | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
                  | (TRANSACTIONAL_FLAG_MASK if is_transactional else 0)
                  | (CONTROL_FLAG_MASK if is_control else 0)
                  | (DELETE_HORIZON_FLAG_MASK if delete_horizon else 0))
    return _assemble(section, attributes, base_offset=base_offset,
                     partition_leader_epoch=partition_leader_epoch,
                     last_offset_delta=last_offset_delta, base_timestamp=base_timestamp,
                     max_timestamp=max_timestamp, producer_id=producer_id,
                     producer_epoch=producer_epoch, base_sequence=base_sequence,
                     records_count=len(records))


def _assemble(section: bytes | bytearray | memoryview, attributes: int, *, base_offset: int,
              partition_leader_epoch: int, last_offset_delta: int, base_timestamp: int,
              max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int,
              records_count: int) -> bytearray:
    """The header with its CRC-32C before an encoded records ``section``."""
    batch = bytearray(BATCH_HEADER_SIZE)
    _HEADER_BEFORE_CRC.pack_into(batch, 0, base_offset,
                                 BATCH_HEADER_SIZE - LOG_OVERHEAD + len(section),
                                 partition_leader_epoch, CURRENT_MAGIC)
    _HEADER_AFTER_CRC.pack_into(batch, ATTRIBUTES_OFFSET, attributes, last_offset_delta,
                                base_timestamp, max_timestamp, producer_id, producer_epoch,
                                base_sequence, records_count)
    batch += section
    _CRC.pack_into(batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
    return batch


def _resolve_offsets_and_timestamps(records: list[Record], base_offset: int,
                                    now_ms: int) -> tuple[list[int], list[int]]:
    offsets, timestamps = [], []
    previous = base_offset - 1
    for record in records:
        offset = previous + 1 if record.offset is None else record.offset
        if offset <= previous:
            raise ValueError(f"record offset {offset} does not follow {previous} "
                             f"(base_offset {base_offset})")
        offsets.append(offset)
        timestamps.append(now_ms if record.timestamp is None else record.timestamp)
        previous = offset
    return offsets, timestamps


def _encode_record(out: bytearray, record: Record, offset_delta: int,
                   timestamp_delta: int) -> None:
    body = bytearray()
    body.append(record.attributes)
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    _write_nullable_bytes(body, record.key)
    _write_nullable_bytes(body, record.value)
    body += encode_varint(len(record.headers))
    for header_key, header_value in record.headers:
        _write_nullable_bytes(body, header_key.encode("utf-8"))
        _write_nullable_bytes(body, header_value)
    out += encode_varint(len(body))
    out += body


def _write_nullable_bytes(out: bytearray, data: bytes | bytearray | memoryview | None) -> None:
    if data is None:
        out += encode_varint(-1)
        return
    out += encode_varint(len(data))
    out += data
