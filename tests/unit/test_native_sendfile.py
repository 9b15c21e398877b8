"""sendfile kernel over real sockets and files."""
from __future__ import annotations

import os
import socket

import pytest

from kcore._native.sendfile import sendfile


@pytest.fixture
def data_file(tmp_path):
    payload = os.urandom(3 << 20)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(payload)
    fd = os.open(path, os.O_RDONLY)
    yield fd, payload
    os.close(fd)


def receive_all(sock, size):
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(size - got)
        assert chunk
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def test_sendfile_sends_the_requested_slice_to_a_blocking_socket(data_file):
    fd, payload = data_file
    left, right = socket.socketpair()
    with left, right:
        assert sendfile(left.fileno(), fd, 1000, 5000) == 5000
        assert receive_all(right, 5000) == payload[1000:6000]


def test_sendfile_returns_short_count_when_a_nonblocking_socket_fills(data_file):
    fd, payload = data_file
    left, right = socket.socketpair()
    with left, right:
        left.setblocking(False)
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        sent = sendfile(left.fileno(), fd, 0, len(payload))
        assert 0 < sent < len(payload)
        assert sendfile(left.fileno(), fd, sent, len(payload) - sent) == 0  # still full
        assert receive_all(right, sent) == payload[:sent]


def test_sendfile_resumed_after_short_counts_delivers_every_byte_in_order(data_file):
    fd, payload = data_file
    left, right = socket.socketpair()
    with left, right:
        left.setblocking(False)
        received = bytearray()
        position = 0
        while position < len(payload):
            position += sendfile(left.fileno(), fd, position, len(payload) - position)
            received += right.recv(1 << 20)
        while len(received) < len(payload):
            received += right.recv(1 << 20)
        assert bytes(received) == payload


def test_sendfile_stops_at_end_of_file(data_file):
    fd, payload = data_file
    left, right = socket.socketpair()
    with left, right:
        assert sendfile(left.fileno(), fd, len(payload) - 10, 100) == 10
        assert receive_all(right, 10) == payload[-10:]


def test_sendfile_raises_oserror_on_a_bad_descriptor(data_file):
    fd, _ = data_file
    with pytest.raises(OSError):
        sendfile(987654, fd, 0, 10)
    with pytest.raises(ValueError):
        sendfile(1, fd, -1, 10)
