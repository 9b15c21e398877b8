# cython: language_level=3
"""Binary search and sanity checks over Kafka's sparse index files.

Offset index (``<base>.index``, Kafka ``OffsetIndex``): 8-byte entries
``i32 relative_offset | i32 position`` (big-endian), relative to the
segment's base offset, strictly increasing in both fields.
Time index (``<base>.timeindex``, Kafka ``TimeIndex``): 12-byte entries
``i64 timestamp | i32 relative_offset``, timestamps strictly increasing,
offsets non-decreasing.

Both files are preallocated (``segment.index.bytes``) and trimmed on roll, so
after a crash the tail is zero-filled: ``*_valid_entries`` finds where the
ordered prefix ends. Buffers are usually ``mmap`` objects; every function
takes the number of entries in use, never trusting the buffer length alone.

The search functions are stateless; the buffer is held only for the call
(the O(n) checks release the GIL, so the caller must not close or resize
the mapping meanwhile). ``ReadOnlyMapping`` maps an inactive index file.
"""
cimport cython
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBuffer_FillInfo,
                             PyBUF_SIMPLE, PyBUF_WRITABLE)
from libc.errno cimport errno
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from posix.mman cimport mmap, munmap, PROT_READ, MAP_SHARED, MAP_FAILED


cdef extern from "kbytes.h" nogil:
    uint32_t kc_load_be32(const unsigned char *p)
    uint64_t kc_load_be64(const unsigned char *p)


OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12


cdef const unsigned char *_acquire(object buf, Py_buffer *view, Py_ssize_t entries,
                                   Py_ssize_t entry_size) except NULL:
    PyObject_GetBuffer(buf, view, PyBUF_SIMPLE)
    if entries < 0 or entries > view.len // entry_size:
        PyBuffer_Release(view)
        raise ValueError(f"{entries} entries of {entry_size} bytes do not fit in {view.len} bytes")
    return <const unsigned char *>view.buf


cdef inline int32_t _rel(const unsigned char *base, Py_ssize_t slot) noexcept nogil:
    return <int32_t>kc_load_be32(base + slot * 8)


cdef inline int32_t _pos(const unsigned char *base, Py_ssize_t slot) noexcept nogil:
    return <int32_t>kc_load_be32(base + slot * 8 + 4)


cdef inline int64_t _ts(const unsigned char *base, Py_ssize_t slot) noexcept nogil:
    return <int64_t>kc_load_be64(base + slot * 12)


cdef inline int64_t _key(const unsigned char *base, Py_ssize_t slot, Py_ssize_t entry_size,
                         Py_ssize_t field, bint wide) noexcept nogil:
    """The i32 (or i64 when ``wide``) at ``field`` of entry ``slot``."""
    cdef const unsigned char *p = base + slot * entry_size + field
    return <int64_t>kc_load_be64(p) if wide else <int32_t>kc_load_be32(p)


cdef Py_ssize_t _largest_at_or_below(object buf, Py_ssize_t entries, Py_ssize_t entry_size,
                                     Py_ssize_t field, bint wide, int64_t target) except -2:
    """Binary search: slot of the largest entry whose key is <= target, or
    -1 when the first entry is already greater (or there are none)."""
    cdef Py_buffer view
    cdef const unsigned char *base = _acquire(buf, &view, entries, entry_size)
    cdef Py_ssize_t lo = 0, hi = entries - 1, mid
    try:
        if entries == 0 or _key(base, 0, entry_size, field, wide) > target:
            return -1
        while lo < hi:
            mid = hi - (hi - lo) // 2
            if _key(base, mid, entry_size, field, wide) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo
    finally:
        PyBuffer_Release(&view)


def offset_index_lookup(buf, Py_ssize_t entries, int64_t target_relative_offset):
    """Slot of the largest entry whose relative offset is <= target, or -1
    when the first entry is already greater (or there are none)."""
    return _largest_at_or_below(buf, entries, 8, 0, False, target_relative_offset)


def time_index_lookup(buf, Py_ssize_t entries, int64_t target_timestamp):
    """Slot of the largest entry whose timestamp is <= target, or -1."""
    return _largest_at_or_below(buf, entries, 12, 0, True, target_timestamp)


def offset_index_position_lookup(buf, Py_ssize_t entries, int64_t target_position):
    """Slot of the largest entry whose position is <= target, or -1 (the
    positions of an offset index increase with its offsets)."""
    return _largest_at_or_below(buf, entries, 8, 4, False, target_position)


def offset_index_entry(buf, Py_ssize_t slot):
    """(relative_offset, position) of entry ``slot``."""
    cdef Py_buffer view
    cdef const unsigned char *base = _acquire(buf, &view, slot + 1, 8)
    try:
        if slot < 0:
            raise IndexError(slot)
        return _rel(base, slot), <int32_t>kc_load_be32(base + slot * 8 + 4)
    finally:
        PyBuffer_Release(&view)


def time_index_entry(buf, Py_ssize_t slot):
    """(timestamp, relative_offset) of entry ``slot``."""
    cdef Py_buffer view
    cdef const unsigned char *base = _acquire(buf, &view, slot + 1, 12)
    try:
        if slot < 0:
            raise IndexError(slot)
        return _ts(base, slot), <int32_t>kc_load_be32(base + slot * 12 + 8)
    finally:
        PyBuffer_Release(&view)


def offset_index_valid_entries(buf, Py_ssize_t entries):
    """Length of the prefix of ``entries`` that is a well-formed offset
    index: relative offsets and positions >= 0 and strictly increasing."""
    cdef Py_buffer view
    cdef const unsigned char *base = _acquire(buf, &view, entries, 8)
    cdef Py_ssize_t slot = 0
    cdef int32_t rel, pos, last_rel = -1, last_pos = -1
    try:
        with nogil:
            while slot < entries:
                rel = _rel(base, slot)
                pos = <int32_t>kc_load_be32(base + slot * 8 + 4)
                if rel <= last_rel or pos <= last_pos:
                    break
                last_rel = rel
                last_pos = pos
                slot += 1
        return slot
    finally:
        PyBuffer_Release(&view)


def time_index_valid_entries(buf, Py_ssize_t entries):
    """Length of the prefix of ``entries`` that is a well-formed time index:
    timestamps strictly increasing, relative offsets >= 0 and non-decreasing."""
    cdef Py_buffer view
    cdef const unsigned char *base = _acquire(buf, &view, entries, 12)
    cdef Py_ssize_t slot = 0
    cdef int64_t ts
    cdef int32_t rel, last_rel = 0
    try:
        with nogil:
            while slot < entries:
                ts = _ts(base, slot)
                rel = <int32_t>kc_load_be32(base + slot * 12 + 8)
                if rel < last_rel or (slot > 0 and ts <= _ts(base, slot - 1)):
                    break
                last_rel = rel
                slot += 1
        return slot
    finally:
        PyBuffer_Release(&view)


@cython.final
@cython.auto_pickle(False)
cdef class ReadOnlyMapping:
    """The first ``length`` bytes of the file ``fd`` mapped read-only and
    shared, holding no descriptor: the caller may close ``fd`` at once.
    Python's ``mmap`` keeps a dup of the descriptor for its whole life,
    which made each mapped index cost one; Kafka's cost none. Exposes the
    bytes through the buffer protocol (read-only); unmapped when the last
    reference goes, memoryviews over it included, so no view can outlive
    the mapping."""
    cdef void *address
    cdef readonly Py_ssize_t length

    def __cinit__(self, int fd, Py_ssize_t length):
        cdef void *address
        self.address = NULL
        if length <= 0:
            raise ValueError(f"cannot map {length} bytes")
        with nogil:
            address = mmap(NULL, <size_t>length, PROT_READ, MAP_SHARED, fd, 0)
        if address == MAP_FAILED:
            raise OSError(errno, "mmap failed on the index file")
        self.address = address
        self.length = length

    def __dealloc__(self):
        if self.address != NULL:
            munmap(self.address, <size_t>self.length)

    def __len__(self):
        return self.length

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        if flags & PyBUF_WRITABLE:
            raise BufferError("the mapping is read-only")
        PyBuffer_FillInfo(buffer, self, self.address, self.length, 1, flags)

    def __releasebuffer__(self, Py_buffer *buffer):
        pass
