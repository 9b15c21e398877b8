# cython: language_level=3
"""Group-commit journal entries: pack one sealed entry (header, name,
batches, CRC-32C) into a writable buffer in one call.

Entry layout (big-endian; kcore/log/journal.py owns the format)::

     0 size u32 (whole entry) | 4 crc u32 (CRC-32C of bytes 8..size)
     8 generation u64 | 16 base offset i64 | 24 name length u16
    26 name | batches

Why native: packing an entry from Python (struct packing, two slice copies,
then a second pass for the generation and CRC when the round is sealed)
cost ~3 us per append, several times the 16 KiB copy itself; here it is one
call. Pure-Python twins live in ``kcore._native.reference``.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset


cdef extern from "crc32c.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const unsigned char *p, size_t n)

cdef extern from "kbytes.h" nogil:
    uint32_t kc_load_be32(const unsigned char *p)
    void kc_store_be32(unsigned char *p, uint32_t v)
    void kc_store_be64(unsigned char *p, uint64_t v)


ENTRY_HEADER_SIZE = 26
cdef enum:
    HEADER = 26
    MAX_NAME = 65535


cdef unsigned char *_room(Py_buffer *view, Py_ssize_t start, Py_ssize_t size) except NULL:
    if start < 0 or size < HEADER or size > 0xFFFFFFFF or start > view.len - size:
        raise ValueError(f"an entry of {size} bytes at {start} does not fit a buffer of {view.len}")
    return <unsigned char *>view.buf + start


cdef _check_numbers(generation, base_offset=0):
    # ValueError (not Cython's OverflowError) like the other kernels and the twin.
    if not 0 <= generation <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"generation {generation} does not fit in an unsigned 64-bit integer")
    if not -0x8000000000000000 <= base_offset <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"{base_offset} does not fit in a signed 64-bit integer")


cdef void _seal(unsigned char *p, uint32_t size, uint64_t generation) noexcept nogil:
    kc_store_be32(p, size)
    kc_store_be64(p + 8, generation)
    kc_store_be32(p + 4, kc_crc32c(0, p + 8, size - 8))


def put_entry(buffer, Py_ssize_t start, name, generation, base_offset, records):
    """Write the sealed entry for ``records`` (any buffer) appended at
    ``base_offset`` to the partition directory ``name`` (bytes) at
    ``start`` of writable ``buffer``; returns its size."""
    cdef Py_buffer out, name_view, data
    _check_numbers(generation, base_offset)
    cdef uint64_t gen = generation
    cdef int64_t base = base_offset
    cdef unsigned char *p
    cdef Py_ssize_t size
    PyObject_GetBuffer(buffer, &out, PyBUF_WRITABLE)
    try:
        PyObject_GetBuffer(name, &name_view, PyBUF_SIMPLE)
        try:
            if name_view.len > MAX_NAME:
                raise ValueError(f"a name of {name_view.len} bytes does not fit a u16")
            PyObject_GetBuffer(records, &data, PyBUF_SIMPLE)
            try:
                size = HEADER + name_view.len + data.len
                p = _room(&out, start, size)
                kc_store_be64(p + 16, <uint64_t>base)
                p[24] = <unsigned char>(name_view.len >> 8)
                p[25] = <unsigned char>(name_view.len & 0xFF)
                memcpy(p + HEADER, name_view.buf, name_view.len)
                memcpy(p + HEADER + name_view.len, data.buf, data.len)
                _seal(p, <uint32_t>size, gen)
            finally:
                PyBuffer_Release(&data)
        finally:
            PyBuffer_Release(&name_view)
    finally:
        PyBuffer_Release(&out)
    return size


def put_padding(buffer, Py_ssize_t start, Py_ssize_t size, generation):
    """Write a sealed padding entry of ``size`` bytes (base offset -1, no
    name, zeros) at ``start`` of writable ``buffer``."""
    cdef Py_buffer out
    _check_numbers(generation)
    cdef uint64_t gen = generation
    cdef unsigned char *p
    PyObject_GetBuffer(buffer, &out, PyBUF_WRITABLE)
    try:
        p = _room(&out, start, size)
        memset(p + 16, 0xFF, 8)  # base offset -1
        memset(p + 24, 0, size - 24)
        _seal(p, <uint32_t>size, gen)
    finally:
        PyBuffer_Release(&out)


def seal_entry(buffer, Py_ssize_t start, generation):
    """Rewrite the generation and CRC of the entry at ``start`` (its size
    field says how long it is) of writable ``buffer``."""
    cdef Py_buffer out
    _check_numbers(generation)
    cdef uint64_t gen = generation
    cdef unsigned char *p
    PyObject_GetBuffer(buffer, &out, PyBUF_WRITABLE)
    try:
        if start < 0 or start > out.len - HEADER:
            raise ValueError(f"no entry header at {start} of a buffer of {out.len}")
        p = <unsigned char *>out.buf + start
        p = _room(&out, start, kc_load_be32(p))
        _seal(p, kc_load_be32(p), gen)
    finally:
        PyBuffer_Release(&out)
