# cython: language_level=3
"""Segment-file kernels: recovery scan and header-only walks over a ``.log``.

A segment file is a sequence of RecordBatch v2 (KIP-98), each
``baseOffset i64 | batchLength i32 | ...`` with the batch occupying
``batchLength + 12`` bytes; see native/batch.h for the full header. The
CRC-32C covers attributes..end, not baseOffset or partitionLeaderEpoch.

* ``scan_segment`` is recovery (Kafka ``LogSegment.recover``): check size,
  magic, CRC and offsets of every batch, stop at the first torn or corrupt
  one, and rebuild the sparse indexes: an offset-index entry
  ``i32 relative last offset | i32 position`` whenever more than
  ``index_interval_bytes`` were written since the previous entry, and a
  time-index entry ``i64 max timestamp so far | i32 relative offset`` beside
  it when the timestamp grew (Kafka ``TimeIndex.maybeAppend``).
* ``find_batch``, ``find_timestamp``, ``read_extent`` and ``walk_headers``
  read only headers, starting from a batch boundary given by the index.

Files are read with pread(2) into private buffers with the GIL released;
the functions keep no state and never change the file. Positions are
int64 file offsets; ``end_position`` bounds every walk (the caller passes
the segment size it trusts).
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport errno, EAGAIN, EINTR, EINVAL, EOPNOTSUPP
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from posix.types cimport off_t
from posix.uio cimport iovec
from posix.unistd cimport pread


cdef extern from "<sys/uio.h>" nogil:
    ssize_t preadv2(int fd, const iovec *iov, int iovcnt, off_t offset, int flags)
    enum: RWF_NOWAIT


cdef extern from "crc32c.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const unsigned char *p, size_t n)

cdef extern from "kbytes.h" nogil:
    uint32_t kc_load_be32(const unsigned char *p)
    uint64_t kc_load_be64(const unsigned char *p)
    void kc_store_be32(unsigned char *p, uint32_t v)
    void kc_store_be64(unsigned char *p, uint64_t v)

cdef extern from "batch.h" nogil:
    int64_t kc_batch_size(const unsigned char *p)
    int KC_CURRENT_MAGIC, KC_MAGIC_OFFSET, KC_CRC_OFFSET, KC_ATTRIBUTES_OFFSET
    int KC_LAST_OFFSET_DELTA_OFFSET, KC_MAX_TIMESTAMP_OFFSET, KC_RECORDS_COUNT_OFFSET


cdef enum:
    HEADER = 61  # KC_BATCH_HEADER_SIZE, as a compile-time array size
    # Recovery reads 1 MiB at a time: a default-sized largest batch
    # (max.message.bytes ~1 MiB) then takes one pread, the syscall is <1% of
    # the copy, and the chunk stays in a Zen 4 core's 1 MiB L2 for the CRC.
    SCAN_CHUNK = 1048576
    # Header walks start at an index entry, at most index.interval.bytes
    # (4 KiB by default) before the target: 8 KiB usually takes one pread.
    WALK_CHUNK = 8192

cdef enum Stop:
    STOP_END = 0
    STOP_SIZE = 1
    STOP_MAGIC = 2
    STOP_CRC = 3
    STOP_COUNT = 4
    STOP_OFFSET = 5
    STOP_IO = 6

_STOP_REASONS = (None, "size", "magic", "crc", "count", "offset")


cdef struct Reader:
    int fd
    unsigned char *buf
    Py_ssize_t capacity
    int64_t start        # file position of buf[0]
    Py_ssize_t length    # bytes of buf holding file data
    int64_t limit        # nothing at or past this position is read
    int error            # errno of a failed pread, else 0
    # Walks of the fetch path read with RWF_NOWAIT: a read takes what the
    # page cache holds without waiting, and waits only for the bytes the
    # walk needs; with stop_uncached it does not wait at all and sets
    # uncached instead (EAGAIN), so the caller can end its walk there.
    int nowait
    int stop_uncached
    int uncached


cdef Py_ssize_t _pread_full(Reader *r, unsigned char *dest, Py_ssize_t n,
                            int64_t position, Py_ssize_t need) noexcept nogil:
    """Up to n bytes at position; -1 on an I/O error. With r.nowait, bytes
    the page cache lacks are waited for only up to ``need`` (and not at all
    with r.stop_uncached, which sets r.uncached instead)."""
    cdef Py_ssize_t got = 0, want = n
    cdef Py_ssize_t k
    cdef bint nowait = r.nowait
    cdef iovec iov
    r.uncached = 0
    while got < want:
        if nowait:
            iov.iov_base = dest + got
            iov.iov_len = <size_t>(want - got)
            k = preadv2(r.fd, &iov, 1, position + got, RWF_NOWAIT)
        else:
            k = pread(r.fd, dest + got, want - got, position + got)
        if k > 0:
            got += k
        elif k == 0:
            break
        elif nowait and errno == EAGAIN:
            if got >= need:
                break  # what the walk needs is here; the rest is on disk
            if r.stop_uncached:
                r.uncached = 1
                break
            nowait = False  # wait, but only for what the walk needs
            want = need
        elif nowait and (errno == EOPNOTSUPP or errno == EINVAL):
            r.nowait = 0  # no RWF_NOWAIT for buffered reads here: plain preads
            nowait = False
        elif errno != EINTR:
            r.error = errno
            return -1
    return got


cdef const unsigned char *_at(Reader *r, int64_t position, Py_ssize_t need) noexcept nogil:
    """Pointer to ``need`` bytes at ``position`` (need <= capacity), reading
    from there when they are not buffered; NULL when the file or the limit
    ends first, or on an I/O error (r.error set; EAGAIN where
    r.stop_uncached met bytes the page cache lacks)."""
    cdef Py_ssize_t n, got
    if position >= r.start and position + need <= r.start + r.length:
        return r.buf + (position - r.start)
    if position + need > r.limit:
        return NULL
    n = r.capacity
    if r.limit - position < n:
        n = <Py_ssize_t>(r.limit - position)
    got = _pread_full(r, r.buf, n, position, need)
    if got < 0:
        r.length = 0
        return NULL
    if got < need and r.uncached:
        r.error = EAGAIN
        r.length = 0
        return NULL
    r.start = position
    r.length = got
    if got < need:
        return NULL
    return r.buf


cdef int _crc_streaming(Reader *r, int64_t position, int64_t end, uint32_t *crc) noexcept nogil:
    """CRC-32C of the file bytes [position, end), reading chunk by chunk.
    Returns 0, or -1 when the file ends first or on an I/O error."""
    cdef uint32_t c = 0
    cdef Py_ssize_t n
    cdef const unsigned char *p
    while position < end:
        if r.start <= position < r.start + r.length:
            # Use what is buffered before reading further.
            n = <Py_ssize_t>(r.start + r.length - position)
            p = r.buf + (position - r.start)
        else:
            n = r.capacity
            p = NULL
        if end - position < n:
            n = <Py_ssize_t>(end - position)
        if p == NULL:
            p = _at(r, position, n)
            if p == NULL:
                return -1
        c = kc_crc32c(c, p, n)
        position += n
    crc[0] = c
    return 0


cdef int _raise_io(Reader *r) except -1:
    if r.error:
        raise OSError(r.error, "pread failed on the segment file")
    return 0


# ------------------------------------------------------------------ recovery

cdef struct Scan:
    int64_t position          # end of the valid batches
    int64_t next_offset
    int64_t max_timestamp
    int64_t offset_of_max_timestamp
    int64_t batches
    int64_t last_index_position
    int64_t last_time_index_timestamp
    int stop
    unsigned char *index
    Py_ssize_t index_len, index_cap
    unsigned char *time_index
    Py_ssize_t time_index_len, time_index_cap


cdef int _grow(unsigned char **buf, Py_ssize_t *cap, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t new_cap
    cdef unsigned char *p
    if need <= cap[0]:
        return 0
    new_cap = cap[0] * 2 if cap[0] else 4096
    while new_cap < need:
        new_cap *= 2
    p = <unsigned char *>realloc(buf[0], new_cap)
    if p == NULL:
        return -1
    buf[0] = p
    cap[0] = new_cap
    return 0


cdef int _add_index_entries(Scan *s, int64_t base_offset, int64_t last_offset,
                            int64_t position) noexcept nogil:
    if _grow(&s.index, &s.index_cap, s.index_len + 8) < 0:
        return -1
    kc_store_be32(s.index + s.index_len, <uint32_t>(last_offset - base_offset))
    kc_store_be32(s.index + s.index_len + 4, <uint32_t>position)
    s.index_len += 8
    if s.max_timestamp > s.last_time_index_timestamp:
        if _grow(&s.time_index, &s.time_index_cap, s.time_index_len + 12) < 0:
            return -1
        kc_store_be64(s.time_index + s.time_index_len, <uint64_t>s.max_timestamp)
        kc_store_be32(s.time_index + s.time_index_len + 8,
                      <uint32_t>(s.offset_of_max_timestamp - base_offset))
        s.time_index_len += 12
        s.last_time_index_timestamp = s.max_timestamp
    return 0


cdef int _check_batch(Reader *r, Scan *s, int64_t base_offset,
                      unsigned char *header, int64_t *size_out) noexcept nogil:
    """Checks the batch at s.position; fills header (61 bytes) and size."""
    cdef const unsigned char *p = _at(r, s.position, HEADER)
    cdef int64_t size, batch_base, last_offset
    cdef uint32_t crc
    cdef int32_t count, last_offset_delta
    if p == NULL:
        return STOP_IO if r.error else STOP_SIZE
    memcpy(header, p, HEADER)
    size = kc_batch_size(header)
    if size < 0 or size > r.limit - s.position:
        return STOP_SIZE
    if header[KC_MAGIC_OFFSET] != KC_CURRENT_MAGIC:
        return STOP_MAGIC
    if _crc_streaming(r, s.position + KC_ATTRIBUTES_OFFSET, s.position + size, &crc) < 0:
        return STOP_IO if r.error else STOP_SIZE
    if crc != kc_load_be32(header + KC_CRC_OFFSET):
        return STOP_CRC
    count = <int32_t>kc_load_be32(header + KC_RECORDS_COUNT_OFFSET)
    last_offset_delta = <int32_t>kc_load_be32(header + KC_LAST_OFFSET_DELTA_OFFSET)
    if count < 0 or last_offset_delta < 0:
        return STOP_COUNT
    batch_base = <int64_t>kc_load_be64(header)
    last_offset = batch_base + last_offset_delta
    # Offsets only grow, and stay within the int32 range relative to the
    # segment's base offset (Kafka LogSegment.ensureOffsetInRange).
    if batch_base < s.next_offset or last_offset - base_offset > 2147483647:
        return STOP_OFFSET
    size_out[0] = size
    return STOP_END


cdef void _scan(Reader *r, Scan *s, int64_t base_offset,
                int64_t index_interval_bytes, bint have_max) noexcept nogil:
    cdef unsigned char header[HEADER]
    cdef int64_t size = 0, last_offset, max_timestamp
    while s.position < r.limit:
        s.stop = _check_batch(r, s, base_offset, header, &size)
        if s.stop != STOP_END:
            return
        last_offset = <int64_t>kc_load_be64(header) + <int32_t>kc_load_be32(header + KC_LAST_OFFSET_DELTA_OFFSET)
        max_timestamp = <int64_t>kc_load_be64(header + KC_MAX_TIMESTAMP_OFFSET)
        if not have_max or max_timestamp > s.max_timestamp:
            have_max = True
            s.max_timestamp = max_timestamp
            s.offset_of_max_timestamp = last_offset
        if s.position - s.last_index_position > index_interval_bytes:
            if _add_index_entries(s, base_offset, last_offset, s.position) < 0:
                s.stop = STOP_IO
                r.error = 12  # ENOMEM
                return
            s.last_index_position = s.position
        s.position += size
        s.next_offset = last_offset + 1
        s.batches += 1


def scan_segment(int fd, int64_t base_offset, int64_t end_position,
                 int64_t index_interval_bytes=4096, int64_t start_position=0,
                 int64_t max_timestamp=-1, int64_t offset_of_max_timestamp=-1,
                 int64_t last_time_index_timestamp=-1):
    """Recover the segment in ``fd`` whose first offset is ``base_offset``,
    reading batches from ``start_position`` (0, or the batch boundary of an
    offset-index entry whose batch and everything before it are trusted)
    up to ``end_position`` (its size).

    Resuming at ``start_position`` > 0, the scan continues the state the
    trusted prefix left: no index entry for the batch there (the prefix's
    last entry names it), ``max_timestamp`` at ``offset_of_max_timestamp``
    so far (unknown when the offset is negative: the first batch read sets
    it) and ``last_time_index_timestamp``, the prefix's last time-index
    entry. Returned counts, entries and next_offset cover the scanned part
    only.

    Returns (valid_end_position, next_offset, max_timestamp,
    offset_of_max_timestamp, batches, index_entries, time_index_entries,
    stop_reason): index entries packed as in the index files; next_offset is
    base_offset and max_timestamp -1 for an empty prefix; stop_reason is
    None when every byte up to end_position was valid, else why the batch at
    valid_end_position was rejected: 'size' (torn or truncated), 'magic',
    'crc', 'count' or 'offset' (going backwards or out of the segment's
    int32 range). OSError on a read failure."""
    cdef Reader r
    cdef Scan s
    r.fd = fd
    r.capacity = SCAN_CHUNK
    cdef bint have_max = offset_of_max_timestamp >= 0
    if start_position < 0 or start_position > end_position:
        raise ValueError(f"start_position {start_position} is outside [0, {end_position}]")
    r.start = 0
    r.length = 0
    r.limit = end_position
    r.error = 0
    r.nowait = 0
    r.stop_uncached = 0
    r.uncached = 0
    s.position = start_position
    s.next_offset = base_offset
    s.max_timestamp = max_timestamp if have_max else -1
    s.offset_of_max_timestamp = offset_of_max_timestamp if have_max else base_offset
    s.batches = 0
    s.last_index_position = start_position
    s.last_time_index_timestamp = last_time_index_timestamp
    s.stop = STOP_END
    s.index = NULL
    s.index_len = s.index_cap = 0
    s.time_index = NULL
    s.time_index_len = s.time_index_cap = 0
    r.buf = <unsigned char *>malloc(SCAN_CHUNK)
    if r.buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            _scan(&r, &s, base_offset, index_interval_bytes, have_max)
        _raise_io(&r)
        if s.stop == STOP_IO:
            raise MemoryError()
        return (s.position, s.next_offset, s.max_timestamp, s.offset_of_max_timestamp,
                s.batches,
                PyBytes_FromStringAndSize(<char *>s.index, s.index_len),
                PyBytes_FromStringAndSize(<char *>s.time_index, s.time_index_len),
                _STOP_REASONS[s.stop])
    finally:
        free(r.buf)
        free(s.index)
        free(s.time_index)


# ------------------------------------------------------------- header walks

cdef struct Walk:
    int64_t position
    int64_t size
    int64_t base_offset
    int64_t last_offset
    int64_t max_timestamp


cdef int _header(Reader *r, int64_t position, Walk *w) noexcept nogil:
    """Reads the header at position into w: 1 on success, 0 at the end of
    the range (or of the file), -1 on a malformed or torn batch, -2 on an
    I/O error."""
    cdef const unsigned char *p
    if position >= r.limit:
        return 0
    p = _at(r, position, HEADER)
    if p == NULL:
        return -2 if r.error else -1
    w.size = kc_batch_size(p)
    if w.size < 0 or w.size > r.limit - position:
        return -1
    w.position = position
    w.base_offset = <int64_t>kc_load_be64(p)
    w.last_offset = w.base_offset + <int32_t>kc_load_be32(p + KC_LAST_OFFSET_DELTA_OFFSET)
    w.max_timestamp = <int64_t>kc_load_be64(p + KC_MAX_TIMESTAMP_OFFSET)
    return 1


cdef void _reader_init(Reader *r, int fd, unsigned char *buf, Py_ssize_t capacity,
                       int64_t end_position) noexcept:
    r.fd = fd
    r.buf = buf
    r.capacity = capacity
    r.start = 0
    r.length = 0
    r.limit = end_position
    r.error = 0
    r.nowait = 0
    r.stop_uncached = 0
    r.uncached = 0


cdef int _check_walk(Reader *r, int status, int64_t position) except -1:
    if status == -2:
        _raise_io(r)
    if status == -1:
        raise ValueError(f"malformed or torn record batch header at position {position}")
    return 0


def find_batch(int fd, int64_t start_position, int64_t end_position, int64_t target_offset,
               int64_t expected_last_offset=-1):
    """First batch at or after ``start_position`` (a batch boundary) whose
    last offset is >= ``target_offset``: (position, size, base_offset,
    last_offset), or None when the walk reaches ``end_position``. Reads
    headers only; ValueError on a malformed header inside the range, or
    when ``expected_last_offset`` >= 0 (the offset of the index entry that
    gave ``start_position``) is not the last offset of the first batch."""
    cdef unsigned char chunk[WALK_CHUNK]
    cdef Reader r
    cdef Walk w
    cdef int status
    cdef int64_t position = start_position
    _reader_init(&r, fd, chunk, WALK_CHUNK, end_position)
    r.nowait = 1  # a chunk's uncached tail is not waited for
    with nogil:
        status = _header(&r, position, &w)
        while status == 1 and w.last_offset < target_offset \
                and not (position == start_position and expected_last_offset >= 0
                         and w.last_offset != expected_last_offset):
            position += w.size
            status = _header(&r, position, &w)
    _check_walk(&r, status, position)
    if status == 1 and position == start_position and expected_last_offset >= 0 \
            and w.last_offset != expected_last_offset:
        raise ValueError(f"index entry for offset {expected_last_offset} points at position "
                         f"{start_position}, which holds offsets up to {w.last_offset}")
    if status == 0:
        return None
    return w.position, w.size, w.base_offset, w.last_offset


def find_timestamp(int fd, int64_t start_position, int64_t end_position,
                   int64_t target_timestamp, int64_t min_offset=-1):
    """First batch at or after ``start_position`` whose max timestamp is
    >= ``target_timestamp`` and whose last offset is >= ``min_offset``:
    (position, size, base_offset, last_offset, max_timestamp), or None."""
    cdef unsigned char chunk[WALK_CHUNK]
    cdef Reader r
    cdef Walk w
    cdef int status
    cdef int64_t position = start_position
    _reader_init(&r, fd, chunk, WALK_CHUNK, end_position)
    with nogil:
        while True:
            status = _header(&r, position, &w)
            if status != 1 or (w.max_timestamp >= target_timestamp
                               and w.last_offset >= min_offset):
                break
            position += w.size
    _check_walk(&r, status, position)
    if status == 0:
        return None
    return w.position, w.size, w.base_offset, w.last_offset, w.max_timestamp


def read_extent(int fd, int64_t start_position, int64_t walk_position, int64_t end_position,
                int64_t max_bytes, int64_t max_offset=-1, bint min_one_batch=True,
                bint stop_when_uncached=False):
    """End position of the whole batches to send from ``start_position``:
    batches are added while the total stays within ``max_bytes`` and each
    batch's last offset is < ``max_offset`` (ignored when negative); with
    ``min_one_batch`` the first batch is taken even when larger than
    max_bytes (KIP-74). ``walk_position`` (>= start_position, a batch
    boundary found from the index) is where the walk resumes: the caller
    vouches that every batch before it qualifies.

    With ``stop_when_uncached`` the walk also ends at a header past
    start_position whose bytes the page cache lacks, rather than wait for
    the disk: a consumer catching up from disk made the event loop wait
    there, at the end of each partition's MiB, for every producer."""
    cdef unsigned char chunk[WALK_CHUNK]
    cdef Reader r
    cdef Walk w
    cdef int status
    cdef int64_t position = walk_position
    if walk_position < start_position:
        raise ValueError("walk_position is before start_position")
    _reader_init(&r, fd, chunk, WALK_CHUNK, end_position)
    r.nowait = 1
    with nogil:
        while True:
            r.stop_uncached = stop_when_uncached and position > start_position
            status = _header(&r, position, &w)
            if status != 1:
                break
            if max_offset >= 0 and w.last_offset >= max_offset:
                break
            if position + w.size - start_position > max_bytes \
                    and not (min_one_batch and position == start_position):
                break
            position += w.size
    if status == -2 and r.uncached:
        return position  # every batch before it qualifies
    _check_walk(&r, status, position)
    return position


def walk_headers(int fd, int64_t start_position, int64_t end_position):
    """Walk batch headers from ``start_position`` without checking CRCs:
    (end_of_whole_batches, batches, next_offset, max_timestamp,
    offset_of_max_timestamp). next_offset is -1 and max_timestamp -1 when
    there is no batch. Stops quietly at a malformed or torn header, so the
    returned end may be before ``end_position``."""
    cdef unsigned char chunk[WALK_CHUNK]
    cdef Reader r
    cdef Walk w
    cdef int status
    cdef int64_t position = start_position, batches = 0
    cdef int64_t next_offset = -1, max_timestamp = -1, offset_of_max_timestamp = -1
    _reader_init(&r, fd, chunk, WALK_CHUNK, end_position)
    with nogil:
        while True:
            status = _header(&r, position, &w)
            if status != 1:
                break
            if batches == 0 or w.max_timestamp > max_timestamp:
                max_timestamp = w.max_timestamp
                offset_of_max_timestamp = w.last_offset
            next_offset = w.last_offset + 1
            batches += 1
            position += w.size
    if status == -2:
        _raise_io(&r)
    return position, batches, next_offset, max_timestamp, offset_of_max_timestamp


def batch_headers(int fd, int64_t start_position, int64_t end_position, Py_ssize_t max_batches=-1):
    """Up to ``max_batches`` (all when negative) batch headers from
    ``start_position``: a list of (position, header) where header is the
    61-byte header as bytes, and the position where the walk stopped (the
    end of whole batches, or ``end_position``)."""
    cdef unsigned char chunk[WALK_CHUNK]
    cdef Reader r
    cdef Walk w
    cdef int status
    cdef int64_t position = start_position
    cdef list out = []
    _reader_init(&r, fd, chunk, WALK_CHUNK, end_position)
    while max_batches < 0 or len(out) < max_batches:
        with nogil:
            status = _header(&r, position, &w)
        if status != 1:
            break
        out.append((position, PyBytes_FromStringAndSize(
            <char *>_at(&r, position, HEADER), HEADER)))
        position += w.size
    else:
        status = 1
    if status == -2:
        _raise_io(&r)
    return out, position
