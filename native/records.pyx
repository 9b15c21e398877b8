# cython: language_level=3
"""RecordBatch v2 kernels: CRC-32C, zigzag varints, batch header parse,
validate and in-place patch.

Batch layout (KIP-98, Kafka ``DefaultRecordBatch``), big-endian::

     0 baseOffset i64 | 8 batchLength i32 (bytes after it; total = +12)
    12 partitionLeaderEpoch i32 | 16 magic i8 = 2 | 17 crc u32 (CRC-32C)
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16
    53 baseSequence i32 | 57 recordsCount i32 | 61 records...

The CRC-32C covers attributes..end: baseOffset and partitionLeaderEpoch are
rewritten in place without touching it. Varints are protobuf base-128
(Kafka ``ByteUtils``): record fields are zigzag-signed, flexible-protocol
lengths unsigned. Pure-Python twins live in ``kcore._native.reference``.

All functions are stateless; those that release the GIL read or write only
the buffer they were given, which the caller must not resize meanwhile.
"""
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release,
                             PyBUF_SIMPLE, PyBUF_WRITABLE)
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t


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
    int kc_batch_validate(const unsigned char *p, size_t avail, int check_count,
                          int check_crc, int64_t *size_out)
    int kc_batch_check_size(const unsigned char *p, size_t avail, int64_t *size_out)


BATCH_HEADER_SIZE = 61
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


cdef tuple _header_tuple(const unsigned char *p):
    return (
        <int64_t>kc_load_be64(p),
        <int32_t>kc_load_be32(p + 8),
        <int32_t>kc_load_be32(p + 12),
        <signed char>p[16],
        kc_load_be32(p + 17),
        <int16_t>kc_load_be16(p + 21),
        <int32_t>kc_load_be32(p + 23),
        <int64_t>kc_load_be64(p + 27),
        <int64_t>kc_load_be64(p + 35),
        <int64_t>kc_load_be64(p + 43),
        <int16_t>kc_load_be16(p + 51),
        <int32_t>kc_load_be32(p + 53),
        <int32_t>kc_load_be32(p + 57),
    )


def parse_batch_header(buf, Py_ssize_t pos=0):
    """The 61-byte v2 header at ``pos`` as a 13-tuple in layout order:
    (base_offset, batch_length, partition_leader_epoch, magic, crc,
    attributes, last_offset_delta, base_timestamp, max_timestamp,
    producer_id, producer_epoch, base_sequence, records_count).
    Nothing is checked but that 61 bytes are there (CorruptBatchError 'size')."""
    cdef Py_buffer view
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if pos < 0 or view.len - pos < BATCH_HEADER_SIZE:
            raise CorruptBatchError("size", pos)
        return _header_tuple(<const unsigned char *>view.buf + pos)
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
    and return one tuple per batch:
    (position, size, last_offset_delta, records_count, attributes,
    base_timestamp, max_timestamp, producer_id, producer_epoch,
    base_sequence). Raises CorruptBatchError at the first failure; the
    buffer is never modified. check_count: recordsCount >= 1 and
    lastOffsetDelta == recordsCount - 1 (Kafka's produce rule)."""
    cdef Py_buffer view
    cdef const unsigned char *base
    cdef const unsigned char *p
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef int status
    cdef list out = []
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        base = <const unsigned char *>view.buf
        while position < view.len:
            p = base + position
            status = _check_one(p, view.len - position, check_count, check_crc, &size)
            if status != KC_BATCH_OK:
                raise_corrupt(status, position)
            out.append((
                position, size,
                <int32_t>kc_load_be32(p + 23), <int32_t>kc_load_be32(p + 57),
                <int16_t>kc_load_be16(p + 21),
                <int64_t>kc_load_be64(p + 27), <int64_t>kc_load_be64(p + 35),
                <int64_t>kc_load_be64(p + 43), <int16_t>kc_load_be16(p + 51),
                <int32_t>kc_load_be32(p + 53),
            ))
            position += size
    finally:
        PyBuffer_Release(&view)
    return out


def batch_infos(buf):
    """The tuples of validate_batches, checking only that the batches'
    sizes tile the buffer (CorruptBatchError 'size' otherwise): for batches
    already validated elsewhere."""
    cdef Py_buffer view
    cdef const unsigned char *base
    cdef const unsigned char *p
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef list out = []
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        base = <const unsigned char *>view.buf
        while position < view.len:
            p = base + position
            if kc_batch_check_size(p, view.len - position, &size) != KC_BATCH_OK:
                raise CorruptBatchError("size", position)
            out.append((
                position, size,
                <int32_t>kc_load_be32(p + 23), <int32_t>kc_load_be32(p + 57),
                <int16_t>kc_load_be16(p + 21),
                <int64_t>kc_load_be64(p + 27), <int64_t>kc_load_be64(p + 35),
                <int64_t>kc_load_be64(p + 43), <int16_t>kc_load_be16(p + 51),
                <int32_t>kc_load_be32(p + 53),
            ))
            position += size
    finally:
        PyBuffer_Release(&view)
    return out


def patch_batches(buf, int64_t base_offset, int32_t partition_leader_epoch):
    """Give the consecutive batches in writable ``buf`` consecutive offsets
    from ``base_offset`` and the leader epoch, in place, CRC untouched.
    Returns the next offset (last offset + 1). Sizes are checked first:
    CorruptBatchError('size') leaves the buffer untouched."""
    cdef Py_buffer view
    cdef unsigned char *base
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef int64_t offset = base_offset
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        base = <unsigned char *>view.buf
        while position < view.len:
            if kc_batch_check_size(base + position, view.len - position, &size) != KC_BATCH_OK:
                raise CorruptBatchError("size", position)
            position += size
        position = 0
        while position < view.len:
            kc_store_be64(base + position, <uint64_t>offset)
            kc_store_be32(base + position + 12, <uint32_t>partition_leader_epoch)
            offset += <int32_t>kc_load_be32(base + position + 23) + 1
            position += <int32_t>kc_load_be32(base + position + 8) + 12
    finally:
        PyBuffer_Release(&view)
    return offset


def stamp_log_append_time(buf, int64_t timestamp):
    """Set the LogAppendTime attribute bit and maxTimestamp of every batch in
    writable ``buf`` and recompute each CRC (Kafka's
    ``DefaultRecordBatch.setMaxTimestamp``). Returns the number of batches.
    Sizes are checked first: CorruptBatchError('size') leaves it untouched."""
    cdef Py_buffer view
    cdef unsigned char *base
    cdef unsigned char *p
    cdef Py_ssize_t position = 0
    cdef int64_t size = 0
    cdef Py_ssize_t count = 0
    cdef uint32_t attributes
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        base = <unsigned char *>view.buf
        while position < view.len:
            if kc_batch_check_size(base + position, view.len - position, &size) != KC_BATCH_OK:
                raise CorruptBatchError("size", position)
            position += size
        position = 0
        while position < view.len:
            p = base + position
            size = <int32_t>kc_load_be32(p + 8) + 12
            attributes = kc_load_be16(p + 21) | 0x08
            p[21] = <unsigned char>(attributes >> 8)
            p[22] = <unsigned char>attributes
            kc_store_be64(p + 35, <uint64_t>timestamp)
            kc_store_be32(p + 17, kc_crc32c(0, p + 21, <size_t>(size - 21)))
            position += size
            count += 1
    finally:
        PyBuffer_Release(&view)
    return count
