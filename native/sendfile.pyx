# cython: language_level=3
"""Zero-copy file-to-socket transfer for fetch responses: sendfile(2).

uvloop implements no ``loop.sendfile``, so the fetch path calls this kernel
on the connection's (non-blocking) socket once the transport's own write
buffer has drained, and waits for writability itself when it returns short.
"""
from libc.errno cimport errno, EAGAIN, EINTR
from libc.stdint cimport int64_t


cdef extern from "<errno.h>" nogil:
    int EWOULDBLOCK

cdef extern from "<sys/sendfile.h>" nogil:
    ssize_t c_sendfile "sendfile"(int out_fd, int in_fd, long *offset, size_t count)


cdef enum:
    # Linux transfers at most 0x7ffff000 bytes per call.
    MAX_CHUNK = 0x7ffff000


def sendfile(int out_fd, int in_fd, int64_t offset, int64_t count):
    """Send ``count`` bytes of ``in_fd`` from ``offset`` to ``out_fd``,
    looping over partial writes with the GIL released. Returns the bytes
    sent: ``count``, or fewer when ``out_fd`` would block (EAGAIN) or the
    file ends first. Raises OSError on any other error (nothing is lost:
    the return value of an earlier call says where to resume)."""
    cdef long position = offset
    cdef int64_t sent = 0
    cdef ssize_t n
    cdef size_t chunk
    cdef int error = 0
    if offset < 0 or count < 0:
        raise ValueError("offset and count must be >= 0")
    with nogil:
        while sent < count:
            chunk = <size_t>(count - sent) if count - sent < MAX_CHUNK else MAX_CHUNK
            n = c_sendfile(out_fd, in_fd, &position, chunk)
            if n > 0:
                sent += n
            elif n == 0:
                break
            elif errno == EINTR:
                continue
            else:
                if errno != EAGAIN and errno != EWOULDBLOCK:
                    error = errno
                break
    if error and sent == 0:
        raise OSError(error, "sendfile failed")
    return sent
