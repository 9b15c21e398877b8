"""journal.put_entry / put_padding / seal_entry against their pure-Python
twins, and against the journal's reader (what replay accepts)."""
from __future__ import annotations

import mmap
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcore._native import journal as native
from kcore._native.twin import journal as twin
from kcore.log.journal import DATA_START, Journal, RoundBuffer, read_entries

U64 = (1 << 64) - 1
names = st.binary(max_size=300)
generations = st.integers(0, U64)
offsets = st.integers(-(1 << 63), (1 << 63) - 1)


def both(function: str, size: int, *args) -> tuple[bytearray, bytearray, object, object]:
    native_out, reference_out = bytearray(b"\xAA" * size), bytearray(b"\xAA" * size)
    native_result = getattr(native, function)(native_out, *args)
    reference_result = getattr(twin, function)(reference_out, *args)
    return native_out, reference_out, native_result, reference_result


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, 64), name=names, generation=generations, base_offset=offsets,
       records=st.binary(max_size=3000), spare=st.integers(0, 16))
def test_put_entry_matches_the_reference(start, name, generation, base_offset, records, spare):
    size = start + native.ENTRY_HEADER_SIZE + len(name) + len(records) + spare
    native_out, reference_out, native_size, reference_size = both(
        "put_entry", size, start, name, generation, base_offset, records)
    assert native_size == reference_size == native.ENTRY_HEADER_SIZE + len(name) + len(records)
    assert native_out == reference_out
    # Bytes outside the entry are untouched.
    assert native_out[:start] == b"\xAA" * start
    assert native_out[start + native_size:] == b"\xAA" * spare
    length, crc, stored_generation, stored_base, name_length = struct.unpack_from(
        ">IIQqH", native_out, start)
    assert (length, stored_generation, stored_base, name_length) == \
        (native_size, generation, base_offset, len(name))
    assert crc == twin.crc32c(native_out[start + 8:start + native_size])


@settings(max_examples=100, deadline=None)
@given(start=st.integers(0, 64), size=st.integers(native.ENTRY_HEADER_SIZE, 9000),
       generation=generations)
def test_put_padding_matches_the_reference(start, size, generation):
    native_out, reference_out, _, _ = both("put_padding", start + size, start, size, generation)
    assert native_out == reference_out
    assert struct.unpack_from(">q", native_out, start + 16) == (-1,)
    assert native_out[start + 26:] == bytes(size - 26)


@settings(max_examples=100, deadline=None)
@given(name=names, records=st.binary(max_size=2000), first=generations, second=generations)
def test_seal_entry_rewrites_generation_and_crc(name, records, first, second):
    entry = bytearray(native.ENTRY_HEADER_SIZE + len(name) + len(records))
    native.put_entry(entry, 0, name, first, 7, records)
    resealed, twin_resealed = bytearray(entry), bytearray(entry)
    native.seal_entry(resealed, 0, second)
    twin.seal_entry(twin_resealed, 0, second)
    assert resealed == twin_resealed
    fresh = bytearray(len(entry))
    native.put_entry(fresh, 0, name, second, 7, records)
    assert resealed == fresh


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
@pytest.mark.parametrize("call", [
    lambda m, out: m.put_entry(out, 10, b"t-0", 1, 0, b"x" * 100),  # does not fit
    lambda m, out: m.put_entry(out, -1, b"t-0", 1, 0, b""),
    lambda m, out: m.put_entry(out, 0, b"n" * 70000, 1, 0, b""),  # name over a u16
    lambda m, out: m.put_entry(out, 0, b"t-0", -1, 0, b""),  # generation below zero
    lambda m, out: m.put_entry(out, 0, b"t-0", 1 << 64, 0, b""),
    lambda m, out: m.put_entry(out, 0, b"t-0", 1, 1 << 63, b""),  # base offset over i64
    lambda m, out: m.put_padding(out, 0, 25, 1),  # shorter than a header
    lambda m, out: m.put_padding(out, 100, 64, 1),
    lambda m, out: m.seal_entry(out, 120, 1),  # no room for a header
], ids=["overflow", "negative-start", "long-name", "negative-generation", "huge-generation",
        "huge-offset", "short-padding", "padding-overflow", "seal-past-end"])
def test_bad_arguments_raise_value_error_and_write_nothing(module, call):
    out = bytearray(128)
    with pytest.raises(ValueError):
        call(module, out)
    assert out == bytearray(128)


def test_read_only_buffer_is_refused():
    with pytest.raises((TypeError, BufferError)):
        native.put_entry(bytes(100), 0, b"t-0", 1, 0, b"")


def test_entry_with_a_size_field_past_the_buffer_is_refused():
    out = bytearray(64)
    struct.pack_into(">I", out, 0, 1000)
    with pytest.raises(ValueError):
        native.seal_entry(out, 0, 1)


def test_round_buffer_entries_replay_after_a_generation_change(tmp_path):
    """Entries added under one generation and sealed under the next (a
    checkpoint ran in between) are read back under the new one."""
    journal = Journal.create(tmp_path, 4 << 20)
    try:
        buffer = RoundBuffer(capacity=64 << 10)
        buffer.append(b"t-0", 0, b"a" * 5000, journal.generation)
        buffer.append(b"t-1", 40, b"b" * 70000, journal.generation)  # grows the buffer
        journal.checkpoint_header()
        view = buffer.seal(journal.generation)
        assert len(view) % 4096 == 0
        os.pwrite(journal.header_fd, view, DATA_START)
        view.release()
    finally:
        journal.close()
    entries = list(read_entries(tmp_path / "group-commit.journal"))
    assert entries == [("t-0", 0, b"a" * 5000), ("t-1", 40, b"b" * 70000)]


def test_an_entry_of_a_new_generation_reseals_the_pending_ones(tmp_path):
    """A checkpoint ended between two appends of one round: the round goes
    out in the new generation, every entry of it readable."""
    journal = Journal.create(tmp_path, 4 << 20)
    try:
        buffer = RoundBuffer()
        buffer.append(b"t-0", 0, b"a" * 100, journal.generation)
        journal.checkpoint_header()
        buffer.append(b"t-0", 1, b"b" * 100, journal.generation)
        view = buffer.seal(journal.generation)
        os.pwrite(journal.header_fd, view, DATA_START)
        view.release()
    finally:
        journal.close()
    assert list(read_entries(tmp_path / "group-commit.journal")) == [
        ("t-0", 0, b"a" * 100), ("t-0", 1, b"b" * 100)]


def test_put_entry_writes_into_an_mmap():
    area = mmap.mmap(-1, 4096)
    size = native.put_entry(area, 100, b"t-3", 9, 12, memoryview(b"xyz"))
    assert area[100 + 26:100 + size] == b"t-3xyz"
    area.close()
