# cython: language_level=3
"""Batch append: write RecordBatches to a segment file and verify them.

``append_batches`` writes ``buf`` with pwrite(2) at a file position and
checks every batch in it (size, magic, CRC-32C, record count; see
native/batch.h). Small appends are checked first and written only when
valid. From ``OVERLAP_BYTES`` on, a helper thread (native/verifier.h) checks
while this thread writes, so the CRC costs no time beside the copy into the
page cache; a bad batch is then found after its bytes reached the file, and
the caller must cut the file back (the bytes lie past the segment's size,
which readers never pass, and recovery would drop them by CRC).
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from libc.errno cimport errno, EINTR
from libc.stdint cimport int64_t
from libc.string cimport strerror
from posix.types cimport off_t
from posix.unistd cimport pwrite


cdef extern from "batch.h" nogil:
    int KC_BATCH_OK, KC_BATCH_SIZE, KC_BATCH_MAGIC, KC_BATCH_CRC, KC_BATCH_COUNT

cdef extern from "<fcntl.h>" nogil:
    int fallocate(int fd, int mode, off_t offset, off_t length)
    int FALLOC_FL_KEEP_SIZE
    int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags)
    unsigned int SYNC_FILE_RANGE_WRITE

cdef extern from "verifier.h" nogil:
    int kc_check_batches(const unsigned char *buf, size_t len, int check_count,
                         int64_t *bad_position)
    int kc_verifier_post(const unsigned char *buf, size_t len, int check_count)
    int kc_verifier_wait(int64_t *bad_position)


cdef enum:
    # Below this the hand-over to the helper (a futex wake, ~2 us on this
    # thread) costs more than the CRC it saves (~1.3 us per 64 KiB at
    # ~50 GB/s); at 1 MiB the CRC is ~20 us of a ~240 us append.
    C_OVERLAP_BYTES = 262144

OVERLAP_BYTES = C_OVERLAP_BYTES

_REASONS = {KC_BATCH_SIZE: "size", KC_BATCH_MAGIC: "magic",
            KC_BATCH_CRC: "crc", KC_BATCH_COUNT: "count"}


cdef int _pwrite_all(int fd, const unsigned char *p, size_t n, int64_t position) noexcept nogil:
    """0, or the errno of the first failed write."""
    cdef size_t done = 0
    cdef ssize_t written
    while done < n:
        written = pwrite(fd, p + done, n - done, position + <int64_t>done)
        if written > 0:
            done += <size_t>written
        elif written < 0 and errno == EINTR:
            continue
        else:
            return errno if written < 0 else 28  # a zero-byte write: ENOSPC
    return 0


def append_batches(int fd, buf, int64_t position, bint check_count=True):
    """Write ``buf`` (whole batches) at ``position`` of ``fd`` and check
    every batch. Returns None when all are valid and written; otherwise
    ``(reason, batch_position, written)``: reason 'size', 'magic', 'crc' or
    'count', the failing batch's position in ``buf``, and whether bytes
    were written (the caller then removes them). Raises OSError when the
    write fails (after the check finished; part of ``buf`` may be written).
    check_count: Kafka's produce rule for recordsCount, as in
    ``records.validate_batches``."""
    cdef Py_buffer view
    cdef const unsigned char *p
    cdef size_t n
    cdef int posted = -1
    cdef int status = KC_BATCH_OK
    cdef int error = 0
    cdef int64_t bad = -1
    if position < 0:
        raise ValueError("position must be >= 0")
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        n = <size_t>view.len
        with nogil:
            if n >= C_OVERLAP_BYTES:
                posted = kc_verifier_post(p, n, check_count)
            if posted != 0:
                status = kc_check_batches(p, n, check_count, &bad)
            if status == KC_BATCH_OK:
                error = _pwrite_all(fd, p, n, position)
            if posted == 0:
                status = kc_verifier_wait(&bad)
    finally:
        PyBuffer_Release(&view)
    if error:
        raise OSError(error, strerror(error).decode())
    if status != KC_BATCH_OK:
        return _REASONS[status], bad, posted == 0
    return None


def reserve_space(int fd, int64_t position, int64_t length):
    """Allocate the blocks of ``[position, position + length)`` without
    changing the file's length (fallocate(2) with FALLOC_FL_KEEP_SIZE), so
    that later appends there find their blocks allocated. A hint: returns
    0, or the errno (EOPNOTSUPP where the file system cannot, ENOSPC when
    it is full) rather than raising, since the append itself reports real
    errors; only a negative position or an empty range raises."""
    cdef int result
    if position < 0 or length <= 0:
        raise ValueError("position must be >= 0 and length > 0")
    with nogil:
        result = fallocate(fd, FALLOC_FL_KEEP_SIZE, <off_t>position, <off_t>length)
    return errno if result != 0 else 0


def start_writeback(int fd, int64_t position, int64_t length):
    """Start writing the dirty pages of ``[position, position + length)``
    to disk and return without waiting for them (sync_file_range(2) with
    SYNC_FILE_RANGE_WRITE alone; it may still wait for the device's queue,
    so callers make it on a worker thread). Durability is not its job: the
    pages may not be written yet, and the file's metadata is not. Returns 0
    or the errno (EBADF for a descriptor closed meanwhile) rather than
    raising: a hint the flush that follows does not depend on."""
    cdef int result
    if position < 0 or length <= 0:
        raise ValueError("position must be >= 0 and length > 0")
    with nogil:
        result = sync_file_range(fd, <off_t>position, <off_t>length, SYNC_FILE_RANGE_WRITE)
    return errno if result != 0 else 0
