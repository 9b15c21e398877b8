"""Twin of native/sendfile.pyx: sendfile(2) in a loop over partial writes."""
from __future__ import annotations

import os

# Linux transfers at most 0x7ffff000 bytes per call.
_MAX_CHUNK = 0x7FFFF000


def sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    if offset < 0 or count < 0:
        raise ValueError("offset and count must be >= 0")
    sent = 0
    while sent < count:
        try:
            n = os.sendfile(out_fd, in_fd, offset + sent, min(count - sent, _MAX_CHUNK))
        except BlockingIOError:
            break
        except InterruptedError:
            continue
        except OSError:
            if sent == 0:
                raise
            break
        if n == 0:
            break
        sent += n
    return sent
