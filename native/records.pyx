# cython: language_level=3
"""RecordBatch v2 kernels: CRC-32C, zigzag varints, batch header parse,
validate and in-place patch, and the record walk.

Batch layout (KIP-98, Kafka ``DefaultRecordBatch``), big-endian; the offsets
are native/batch.h's ``KC_*_OFFSET`` (kcore/_native/batch_layout.py for
Python)::

     0 baseOffset i64 | 8 batchLength i32 (bytes after it; total = +12)
    12 partitionLeaderEpoch i32 | 16 magic i8 = 2 | 17 crc u32 (CRC-32C)
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16
    53 baseSequence i32 | 57 recordsCount i32 | 61 records...

The CRC-32C covers attributes..end: baseOffset and partitionLeaderEpoch are
rewritten in place without touching it. Varints are protobuf base-128
(Kafka ``ByteUtils``): record fields are zigzag-signed, flexible-protocol
lengths unsigned. Headers come back as ``BatchHeader`` and records as
``RecordSpan``: small immutable objects holding C integers, so building one
allocates no int objects (bench/bench_native.py measures it against a
tuple). The pure-Python twin is ``kcore._native.twin.records``.

All functions are stateless; those that release the GIL read or write only
the buffer they were given, which the caller must not resize meanwhile.
"""
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release,
                             PyBUF_SIMPLE, PyBUF_WRITABLE)
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t

cimport cython


cdef extern from "crc32c.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const unsigned char *p, size_t n)
    const char *kc_crc32c_implementation()
    int KC_CRC32C_HARDWARE

cdef extern from "kbytes.h" nogil:
    uint32_t kc_load_be32(const unsigned char *p)
    uint64_t kc_load_be64(const unsigned char *p)
    uint32_t kc_load_be16(const unsigned char *p)
    void kc_store_be32(unsigned char *p, uint32_t v)
    void kc_store_be64(unsigned char *p, uint64_t v)

cdef extern from "batch.h" nogil:
    int KC_BATCH_OK, KC_BATCH_SIZE, KC_BATCH_MAGIC, KC_BATCH_CRC, KC_BATCH_COUNT
    int KC_BATCH_HEADER_SIZE, KC_LOG_OVERHEAD, KC_TIMESTAMP_TYPE_MASK
    int KC_BASE_OFFSET_OFFSET, KC_LENGTH_OFFSET, KC_PARTITION_LEADER_EPOCH_OFFSET
    int KC_MAGIC_OFFSET, KC_CRC_OFFSET, KC_ATTRIBUTES_OFFSET, KC_LAST_OFFSET_DELTA_OFFSET
    int KC_BASE_TIMESTAMP_OFFSET, KC_MAX_TIMESTAMP_OFFSET, KC_PRODUCER_ID_OFFSET
    int KC_PRODUCER_EPOCH_OFFSET, KC_BASE_SEQUENCE_OFFSET, KC_RECORDS_COUNT_OFFSET
    int kc_batch_validate(const unsigned char *p, size_t avail, int check_count,
                          int check_crc, int64_t *size_out)
    int kc_batch_check_size(const unsigned char *p, size_t avail, int64_t *size_out)


# True when the crc32 instruction (SSE4.2) is compiled in.
CRC32C_HARDWARE = bool(KC_CRC32C_HARDWARE)
# 'vpclmulqdq' (AVX-512 folding), 'sse4.2' (crc32 instruction) or 'table'.
CRC32C_IMPLEMENTATION = kc_crc32c_implementation().decode()

# Releasing and retaking the GIL costs about a microsecond (more when other
# threads wait); CRC-32C runs at ~10-20 GB/s, so below 64 KiB (~4 us) holding
# the GIL is cheaper than handing it over.
cdef enum:
    GIL_RELEASE_BYTES = 65536

cdef enum:
    MAX_VARINT_BYTES = 10  # ceil(64 / 7)

_REASONS = {KC_BATCH_SIZE: "size", KC_BATCH_MAGIC: "magic",
            KC_BATCH_CRC: "crc", KC_BATCH_COUNT: "count"}


class CorruptBatchError(ValueError):
    """A RecordBatch failed a check. ``reason`` is 'size', 'magic', 'crc' or
    'count'; ``position`` is the byte position of the batch in the buffer."""

    def __init__(self, reason, position=0, message=None):
        self.reason = reason
        self.position = position
        super().__init__(message or f"corrupt record batch at position {position}: {reason}")


cdef raise_corrupt(int status, Py_ssize_t position):
    raise CorruptBatchError(_REASONS[status], position)


def crc32c(data, unsigned int crc=0):
    """CRC-32C of ``data`` (any buffer), continuing from ``crc``."""
    cdef Py_buffer view
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= GIL_RELEASE_BYTES:
            with nogil:
                result = kc_crc32c(crc, <const unsigned char *>view.buf, view.len)
        else:
            result = kc_crc32c(crc, <const unsigned char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def zigzag_encode(n):
    """Map a signed 64-bit integer to unsigned: 0,-1,1,-2 -> 0,1,2,3."""
    cdef int64_t v = _as_int64(n)
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


def zigzag_decode(n):
    """Inverse of zigzag_encode for an unsigned 64-bit integer."""
    cdef uint64_t u = _as_uint64(n)
    return <int64_t>((u >> 1) ^ (0 - (u & 1)))


cdef int64_t _as_int64(object n) except? -1:
    try:
        return n
    except OverflowError:
        raise ValueError(f"{n} does not fit in a signed 64-bit integer") from None


cdef uint64_t _as_uint64(object n) except? 0xFFFFFFFFFFFFFFFF:
    if n < 0:
        raise ValueError(f"{n} is negative")
    try:
        return n
    except OverflowError:
        raise ValueError(f"{n} does not fit in an unsigned 64-bit integer") from None


cdef bytes _encode_u64(uint64_t u):
    cdef unsigned char out[MAX_VARINT_BYTES]
    cdef Py_ssize_t n = 0
    while u >= 0x80:
        out[n] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        n += 1
    out[n] = <unsigned char>u
    return PyBytes_FromStringAndSize(<char *>out, n + 1)


cdef uint64_t _decode_u64(const unsigned char *p, Py_ssize_t length,
                          Py_ssize_t *pos) except? 0xFFFFFFFFFFFFFFFF:
    cdef uint64_t result = 0
    cdef unsigned int shift = 0
    cdef Py_ssize_t i = pos[0]
    cdef unsigned char b
    if i < 0:
        raise ValueError(f"position {i} is negative")
    while True:
        if i >= length:
            raise ValueError("truncated varint")
        b = p[i]
        i += 1
        if shift == 63 and b > 1:
            raise ValueError("overlong varint: more than 64 bits")
        result |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            pos[0] = i
            return result
        shift += 7
        if shift > 63:
            raise ValueError("overlong varint: more than 10 bytes")


def encode_uvarint(n):
    """Unsigned base-128 varint of 0 <= n < 2**64."""
    return _encode_u64(_as_uint64(n))


def encode_varint(n):
    """Zigzag varint of a signed 64-bit integer (Kafka varlong)."""
    cdef int64_t v = _as_int64(n)
    return _encode_u64((<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


def decode_uvarint(buf, Py_ssize_t pos=0):
    """(value, new_pos) of the unsigned varint at ``pos``; ValueError when it
    is truncated or longer than 64 bits."""
    cdef Py_buffer view
    cdef uint64_t u
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        u = _decode_u64(<const unsigned char *>view.buf, view.len, &pos)
    finally:
        PyBuffer_Release(&view)
    return u, pos


def decode_varint(buf, Py_ssize_t pos=0):
    """(value, new_pos) of the zigzag varint at ``pos``; ValueError when it
    is truncated or longer than 64 bits."""
    cdef Py_buffer view
    cdef uint64_t u
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        u = _decode_u64(<const unsigned char *>view.buf, view.len, &pos)
    finally:
        PyBuffer_Release(&view)
    return <int64_t>((u >> 1) ^ (0 - (u & 1))), pos


_HEADER_FIELDS = (
    "position", "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
    "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
    "producer_epoch", "base_sequence", "records_count",
)


@cython.final
@cython.auto_pickle(False)
@cython.freelist(8)
cdef class BatchHeader:
    """The v2 header of the batch at ``position`` of the buffer it was read
    from, with Kafka's field names. Immutable; made by the kernels."""
    cdef readonly Py_ssize_t position
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly signed char magic
    cdef readonly uint32_t crc
    cdef readonly int16_t attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t records_count

    @property
    def size_in_bytes(self):
        return <int64_t>self.batch_length + KC_LOG_OVERHEAD

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta

    @property
    def compression_codec(self):
        return self.attributes & 0x07

    @property
    def timestamp_type(self):
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & KC_TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self):
        return bool(self.attributes & 0x10)

    @property
    def is_control(self):
        return bool(self.attributes & 0x20)

    @property
    def delete_horizon_ms(self):
        """KIP-534: with attribute bit 6, baseTimestamp is the delete horizon."""
        return self.base_timestamp if self.attributes & 0x40 else None

    def __eq__(self, other):
        return _same_fields(self, other, _HEADER_FIELDS)

    def __repr__(self):
        return _repr(self, _HEADER_FIELDS)


cdef object _same_fields(object a, object b, tuple names):
    """Equal when ``b`` has the same values under ``names`` (so a native
    value equals its pure-Python twin)."""
    for name in names:
        if not hasattr(b, name):
            return NotImplemented
        if getattr(a, name) != getattr(b, name):
            return False
    return True


cdef str _repr(object value, tuple names):
    fields = ", ".join([f"{name}={getattr(value, name)!r}" for name in names])
    return f"{type(value).__name__}({fields})"


cdef BatchHeader _header_at(const unsigned char *p, Py_ssize_t position):
    cdef BatchHeader h = BatchHeader.__new__(BatchHeader)
    h.position = position
    h.base_offset = <int64_t>kc_load_be64(p + KC_BASE_OFFSET_OFFSET)
    h.batch_length = <int32_t>kc_load_be32(p + KC_LENGTH_OFFSET)
    h.partition_leader_epoch = <int32_t>kc_load_be32(p + KC_PARTITION_LEADER_EPOCH_OFFSET)
    h.magic = <signed char>p[KC_MAGIC_OFFSET]
    h.crc = kc_load_be32(p + KC_CRC_OFFSET)
    h.attributes = <int16_t>kc_load_be16(p + KC_ATTRIBUTES_OFFSET)
    h.last_offset_delta = <int32_t>kc_load_be32(p + KC_LAST_OFFSET_DELTA_OFFSET)
    h.base_timestamp = <int64_t>kc_load_be64(p + KC_BASE_TIMESTAMP_OFFSET)
    h.max_timestamp = <int64_t>kc_load_be64(p + KC_MAX_TIMESTAMP_OFFSET)
    h.producer_id = <int64_t>kc_load_be64(p + KC_PRODUCER_ID_OFFSET)
    h.producer_epoch = <int16_t>kc_load_be16(p + KC_PRODUCER_EPOCH_OFFSET)
    h.base_sequence = <int32_t>kc_load_be32(p + KC_BASE_SEQUENCE_OFFSET)
    h.records_count = <int32_t>kc_load_be32(p + KC_RECORDS_COUNT_OFFSET)
    return h


def parse_batch_header(buf, Py_ssize_t pos=0):
    """The BatchHeader of the v2 header at ``pos``. Nothing is checked but
    that 61 bytes are there (CorruptBatchError 'size')."""
    cdef Py_buffer view
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if pos < 0 or view.len - pos < KC_BATCH_HEADER_SIZE:
            raise CorruptBatchError("size", pos)
        return _header_at(<const unsigned char *>view.buf + pos, pos)
    finally:
        PyBuffer_Release(&view)


cdef int _check_one(const unsigned char *p, size_t avail, int check_count,
                    int check_crc, int64_t *size) noexcept:
    cdef int status
    cdef int64_t declared
    if check_crc and avail >= GIL_RELEASE_BYTES \
            and kc_batch_check_size(p, avail, &declared) == KC_BATCH_OK \
            and declared >= GIL_RELEASE_BYTES:
        with nogil:
            status = kc_batch_validate(p, avail, check_count, 1, size)
        return status
    return kc_batch_validate(p, avail, check_count, check_crc, size)


def validate_batches(buf, bint check_count=True, bint check_crc=True):
    """Check every consecutive batch in ``buf`` (size >= 61 and inside the
    buffer, magic 2, CRC-32C unless ``check_crc`` is false, record count)
    and return the BatchHeader of each. Raises CorruptBatchError at the
    first failure; the buffer is never modified. check_count:
    recordsCount >= 1 and lastOffsetDelta == recordsCount - 1 (Kafka's
    produce rule)."""
    cdef Py_buffer view
    cdef const unsigned char *base
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef int status
    cdef list out = []
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        base = <const unsigned char *>view.buf
        while position < view.len:
            status = _check_one(base + position, view.len - position, check_count, check_crc, &size)
            if status != KC_BATCH_OK:
                raise_corrupt(status, position)
            out.append(_header_at(base + position, position))
            position += size
    finally:
        PyBuffer_Release(&view)
    return out


def batch_infos(buf):
    """The headers of validate_batches, checking only that the batches'
    sizes tile the buffer (CorruptBatchError 'size' otherwise): for batches
    already validated elsewhere."""
    cdef Py_buffer view
    cdef const unsigned char *base
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef list out = []
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        base = <const unsigned char *>view.buf
        while position < view.len:
            if kc_batch_check_size(base + position, view.len - position, &size) != KC_BATCH_OK:
                raise CorruptBatchError("size", position)
            out.append(_header_at(base + position, position))
            position += size
    finally:
        PyBuffer_Release(&view)
    return out


cdef int _check_sizes(Py_buffer *view) except -1:
    """CorruptBatchError('size') unless the batches' sizes tile the buffer."""
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    while position < view.len:
        if kc_batch_check_size(<const unsigned char *>view.buf + position,
                               view.len - position, &size) != KC_BATCH_OK:
            raise CorruptBatchError("size", position)
        position += size
    return 0


def patch_batches(buf, int64_t base_offset, int32_t partition_leader_epoch):
    """Give the consecutive batches in writable ``buf`` consecutive offsets
    from ``base_offset`` and the leader epoch, in place, CRC untouched.
    Returns the next offset (last offset + 1). Sizes are checked first:
    CorruptBatchError('size') leaves the buffer untouched."""
    cdef Py_buffer view
    cdef unsigned char *p
    cdef Py_ssize_t position = 0
    cdef int64_t offset = base_offset
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        _check_sizes(&view)
        while position < view.len:
            p = <unsigned char *>view.buf + position
            kc_store_be64(p + KC_BASE_OFFSET_OFFSET, <uint64_t>offset)
            kc_store_be32(p + KC_PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>partition_leader_epoch)
            offset += <int32_t>kc_load_be32(p + KC_LAST_OFFSET_DELTA_OFFSET) + 1
            position += <int32_t>kc_load_be32(p + KC_LENGTH_OFFSET) + KC_LOG_OVERHEAD
    finally:
        PyBuffer_Release(&view)
    return offset


def stamp_log_append_time(buf, int64_t timestamp):
    """Set the LogAppendTime attribute bit and maxTimestamp of every batch in
    writable ``buf`` and recompute each CRC (Kafka's
    ``DefaultRecordBatch.setMaxTimestamp``). Returns the number of batches.
    Sizes are checked first: CorruptBatchError('size') leaves it untouched."""
    cdef Py_buffer view
    cdef unsigned char *p
    cdef Py_ssize_t position = 0
    cdef int64_t size
    cdef Py_ssize_t count = 0
    cdef uint32_t attributes
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        _check_sizes(&view)
        while position < view.len:
            p = <unsigned char *>view.buf + position
            size = <int32_t>kc_load_be32(p + KC_LENGTH_OFFSET) + KC_LOG_OVERHEAD
            attributes = kc_load_be16(p + KC_ATTRIBUTES_OFFSET) | KC_TIMESTAMP_TYPE_MASK
            p[KC_ATTRIBUTES_OFFSET] = <unsigned char>(attributes >> 8)
            p[KC_ATTRIBUTES_OFFSET + 1] = <unsigned char>attributes
            kc_store_be64(p + KC_MAX_TIMESTAMP_OFFSET, <uint64_t>timestamp)
            kc_store_be32(p + KC_CRC_OFFSET, kc_crc32c(0, p + KC_ATTRIBUTES_OFFSET,
                                                       <size_t>(size - KC_ATTRIBUTES_OFFSET)))
            position += size
            count += 1
    finally:
        PyBuffer_Release(&view)
    return count


# ------------------------------------------------------------------ records

_SPAN_FIELDS = (
    "position", "end", "attributes", "timestamp_delta", "offset_delta_position",
    "offset_delta", "key_position", "key_length", "value_length",
)


@cython.final
@cython.auto_pickle(False)
@cython.freelist(16)
cdef class RecordSpan:
    """Where one record of a records section lies, and its small fields
    (Kafka ``DefaultRecord``): it occupies [position, end); its key is
    section[key_position:key_position + key_length] (key_length -1: null
    key); value_length -1 is a null value (a tombstone);
    offset_delta_position is where the fields after timestampDelta start."""
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t end
    cdef readonly int attributes
    cdef readonly int64_t timestamp_delta
    cdef readonly Py_ssize_t offset_delta_position
    cdef readonly int64_t offset_delta
    cdef readonly Py_ssize_t key_position
    cdef readonly int64_t key_length
    cdef readonly int64_t value_length

    def __eq__(self, other):
        return _same_fields(self, other, _SPAN_FIELDS)

    def __repr__(self):
        return _repr(self, _SPAN_FIELDS)


cdef int _varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos,
                 int64_t *value) noexcept nogil:
    """The zigzag varint at pos[0], which must end before ``end``: 0 with
    pos[0] moved past it, or -1 when it is truncated or overlong."""
    cdef uint64_t u = 0
    cdef unsigned int shift = 0
    cdef Py_ssize_t i = pos[0]
    cdef unsigned char b
    while True:
        if i >= end:
            return -1
        b = p[i]
        i += 1
        if shift == 63 and b > 1:
            return -1
        u |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            return -1
    pos[0] = i
    value[0] = <int64_t>((u >> 1) ^ (0 - (u & 1)))
    return 0


cdef int _nullable_length(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos,
                          int64_t *length) noexcept nogil:
    if _varint(p, end, pos, length) < 0 or length[0] < -1 or length[0] > end - pos[0]:
        return -1
    return 0


cdef int _record_at(const unsigned char *p, Py_ssize_t section_end, Py_ssize_t position,
                    RecordSpan span) noexcept:
    """Fill ``span`` with the record at ``position``: 0, or -1 when the
    record is malformed or runs past ``section_end``."""
    cdef int64_t length
    cdef Py_ssize_t i = position
    span.position = position
    if _varint(p, section_end, &i, &length) < 0 or length < 1 or length > section_end - i:
        return -1
    span.end = i + length
    span.attributes = p[i]
    i += 1
    if _varint(p, span.end, &i, &span.timestamp_delta) < 0:
        return -1
    span.offset_delta_position = i
    if _varint(p, span.end, &i, &span.offset_delta) < 0:
        return -1
    if _nullable_length(p, span.end, &i, &span.key_length) < 0:
        return -1
    span.key_position = i
    if span.key_length > 0:
        i += span.key_length
    return _nullable_length(p, span.end, &i, &span.value_length)


def walk_records(section, Py_ssize_t position=0, Py_ssize_t max_records=-1):
    """The RecordSpan of every record in an uncompressed records section,
    in order, from ``position`` and at most ``max_records`` of them (-1:
    all; a large section is walked window by window, each resuming at the
    previous window's last ``end``, so its spans, ~100 bytes each, never
    all exist at once); ValueError at the first record that is malformed or
    runs past the section."""
    cdef Py_buffer view
    cdef RecordSpan span
    cdef list out = []
    cdef Py_ssize_t found = 0
    PyObject_GetBuffer(section, &view, PyBUF_SIMPLE)
    try:
        if position < 0 or position > view.len:
            raise ValueError(f"position {position} is outside the {view.len}-byte records section")
        while position < view.len and found != max_records:
            span = RecordSpan.__new__(RecordSpan)
            if _record_at(<const unsigned char *>view.buf, view.len, position, span) < 0:
                raise ValueError(f"malformed record at position {position} of a "
                                 f"{view.len}-byte records section")
            out.append(span)
            found += 1
            position = span.end
    finally:
        PyBuffer_Release(&view)
    return out


def count_records(section):
    """How many records an uncompressed records section holds; ValueError
    at the first record that is malformed or runs past the section (as
    ``walk_records``), without building a RecordSpan per record: 64 MiB of
    7-byte records are 9.6M spans, ~1 GB."""
    cdef Py_buffer view
    cdef Py_ssize_t position = 0
    cdef Py_ssize_t count = 0
    cdef RecordSpan span = RecordSpan.__new__(RecordSpan)
    PyObject_GetBuffer(section, &view, PyBUF_SIMPLE)
    try:
        while position < view.len:
            if _record_at(<const unsigned char *>view.buf, view.len, position, span) < 0:
                raise ValueError(f"malformed record at position {position} of a "
                                 f"{view.len}-byte records section")
            count += 1
            position = span.end
    finally:
        PyBuffer_Release(&view)
    return count


def timestamps_within(section, int64_t base_timestamp, int64_t earliest, int64_t latest):
    """True when the timestamp (base_timestamp + timestampDelta) of every
    record of the uncompressed records section is -1 (none) or within
    [earliest, latest]; False when one is outside, or the records cannot
    be read (Kafka ``LogValidator.validateTimestamp``: INVALID_TIMESTAMP)."""
    cdef Py_buffer view
    cdef Py_ssize_t position = 0
    cdef RecordSpan span = RecordSpan.__new__(RecordSpan)
    cdef int64_t timestamp
    PyObject_GetBuffer(section, &view, PyBUF_SIMPLE)
    try:
        while position < view.len:
            if _record_at(<const unsigned char *>view.buf, view.len, position, span) < 0:
                return False
            timestamp = <int64_t>(<uint64_t>base_timestamp + <uint64_t>span.timestamp_delta)
            if timestamp != -1 and (timestamp < earliest or timestamp > latest):
                return False
            position = span.end
    finally:
        PyBuffer_Release(&view)
    return True


def has_null_key(section):
    """True when a record of the uncompressed records section has a null
    key, or the records cannot be read: a compacted topic refuses both
    (Kafka ``LogValidator``: INVALID_RECORD)."""
    cdef Py_buffer view
    cdef Py_ssize_t position = 0
    cdef RecordSpan span = RecordSpan.__new__(RecordSpan)
    PyObject_GetBuffer(section, &view, PyBUF_SIMPLE)
    try:
        while position < view.len:
            if _record_at(<const unsigned char *>view.buf, view.len, position, span) < 0 \
                    or span.key_length < 0:
                return True
            position = span.end
    finally:
        PyBuffer_Release(&view)
    return False


cdef int64_t _wire_schema_id(const unsigned char *p, Py_ssize_t position, int64_t length) noexcept nogil:
    """The schema id of a key or value at ``position`` in Confluent's wire
    format (magic byte 0, then the id as a big-endian int32): -2 when it is
    null, -1 when it carries none (shorter than 5 bytes, another first byte)."""
    if length < 0:
        return -2
    if length < 5 or p[position] != 0:
        return -1
    return (<int64_t>p[position + 1] << 24) | (<int64_t>p[position + 2] << 16) \
        | (<int64_t>p[position + 3] << 8) | <int64_t>p[position + 4]


cdef inline int _next_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos,
                             int64_t *value) noexcept nogil:
    """_varint with a fast path for the one-byte varints most record
    fields are (attributes aside, a small record's every field is one)."""
    cdef unsigned char b
    if pos[0] < end:
        b = p[pos[0]]
        if b < 0x80:
            pos[0] += 1
            value[0] = <int64_t>((b >> 1) ^ (0 - (b & 1)))
            return 0
    return _varint(p, end, pos, value)


def record_schema_ids(section, bint keys, bint distinct=True):
    """The schema id each record's key (``keys``) or value carries in
    Confluent's wire format, for an uncompressed records section: the id,
    -1 for none, -2 for a null key or value. ``distinct``: each id once per
    run of records carrying it, which is all a check of which ids occur
    needs (a batch usually carries one). ValueError at the first record
    that is malformed or runs past the section.

    Its own loop rather than _record_at's: the produce path of a topic
    with validation reads every record, and this one costs ~10 ns a
    record against ~30 ns (100-byte records, bench_schema_registry.py)."""
    cdef Py_buffer view
    cdef Py_ssize_t position = 0, i, end
    cdef int64_t length, skipped, key_length, value_length, found, last = -3
    cdef list out = []
    cdef const unsigned char *p
    PyObject_GetBuffer(section, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        while position < view.len:
            i = position
            if _next_varint(p, view.len, &i, &length) < 0 or length < 1 or length > view.len - i:
                raise ValueError(f"malformed record at position {position} of a "
                                 f"{view.len}-byte records section")
            end = i + length
            i += 1  # attributes
            if _next_varint(p, end, &i, &skipped) < 0 or _next_varint(p, end, &i, &skipped) < 0 \
                    or _next_varint(p, end, &i, &key_length) < 0 or key_length < -1 \
                    or key_length > end - i:
                raise ValueError(f"malformed record at position {position} of a "
                                 f"{view.len}-byte records section")
            if keys:
                found = _wire_schema_id(p, i, key_length)
            if key_length > 0:
                i += key_length
            if _next_varint(p, end, &i, &value_length) < 0 or value_length < -1 \
                    or value_length > end - i:
                raise ValueError(f"malformed record at position {position} of a "
                                 f"{view.len}-byte records section")
            if not keys:
                found = _wire_schema_id(p, i, value_length)
            if not distinct or found != last:
                out.append(found)
                last = found
            position = end
    finally:
        PyBuffer_Release(&view)
    return out
