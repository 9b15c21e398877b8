"""`kcore dump-log` on real files written from built batches and index entries."""

import argparse
import io
import re
import struct

import pytest

from kcore.cli import dump_log
from kcore.protocol.compression import CompressionType
from kcore.protocol.records import ControlType, Record, build_batch, build_control_batch

NOW = 1_700_000_000_000
SEGMENT = "00000000000000000100.log"


def parse_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kcore")
    dump_log.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["dump-log", *argv])


def dump(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    args = parse_args(*argv)
    status = args.run(args, out)
    return status, out.getvalue()


def fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+): (\S+)", line))


def segment_bytes() -> bytes:
    plain = build_batch([Record(timestamp=NOW + i, key=b"k%d" % i, value=b"value-%d" % i,
                                headers=[("trace", b"1"), ("span", None)]) for i in range(3)],
                        base_offset=100, partition_leader_epoch=0)
    zstd = build_batch([Record(timestamp=NOW + 10, key=None, value=b"z" * 200),
                        Record(timestamp=NOW + 5, key=b"nk", value=None)],
                       base_offset=103, codec=CompressionType.ZSTD, partition_leader_epoch=0)
    transactional = build_batch([Record(timestamp=NOW + 20, value=b"txn")], base_offset=105,
                                producer_id=42, producer_epoch=3, base_sequence=7,
                                is_transactional=True, partition_leader_epoch=1)
    marker = build_control_batch(ControlType.COMMIT, producer_id=42, producer_epoch=3,
                                 coordinator_epoch=5, base_offset=106, timestamp=NOW + 30,
                                 partition_leader_epoch=1)
    return bytes(plain + zstd + transactional + marker)


@pytest.fixture
def segment(tmp_path):
    path = tmp_path / SEGMENT
    path.write_bytes(segment_bytes())
    return path


def test_prints_one_line_per_batch_with_kafka_fields(segment):
    status, output = dump(str(segment))
    assert status == 0
    lines = output.splitlines()
    assert lines[0] == f"Dumping {segment}"
    assert lines[1] == "Log starting offset: 100"
    batches = [fields(line) for line in lines[2:]]
    assert [(b["baseOffset"], b["lastOffset"], b["count"]) for b in batches] == [
        ("100", "102", "3"), ("103", "104", "2"), ("105", "105", "1"), ("106", "106", "1")]
    assert [b["compresscodec"] for b in batches] == ["none", "zstd", "none", "none"]
    assert all(b["isvalid"] == "true" and b["magic"] == "2" for b in batches)
    assert batches[0]["position"] == "0"
    assert int(batches[1]["position"]) == int(batches[0]["size"])
    assert batches[0]["CreateTime"] == str(NOW + 2)  # the batch's maxTimestamp
    assert (batches[2]["producerId"], batches[2]["producerEpoch"]) == ("42", "3")
    assert (batches[2]["baseSequence"], batches[2]["lastSequence"]) == ("7", "7")
    assert batches[2]["isTransactional"] == "true" and batches[2]["isControl"] == "false"
    assert batches[3]["isControl"] == "true"
    assert batches[3]["partitionLeaderEpoch"] == "1"
    assert "deleteHorizonMs: OptionalLong.empty" in lines[2]
    assert sum(int(b["size"]) for b in batches) == len(segment_bytes())


def test_records_flag_prints_each_record_with_key_and_payload(segment):
    _, output = dump(str(segment), "--records")
    records = [line for line in output.splitlines() if line.startswith("| ")]
    assert [fields(line)["offset"] for line in records] == [str(o) for o in range(100, 107)]
    assert records[0] == (f"| offset: 100 CreateTime: {NOW} keySize: 2 valueSize: 7 "
                          f"sequence: -1 headerKeys: [trace,span] key: k0 payload: value-0")
    assert records[3] == (f"| offset: 103 CreateTime: {NOW + 10} keySize: -1 valueSize: 200 "
                          f"sequence: -1 headerKeys: [] payload: {'z' * 200}")
    assert records[4].endswith("keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: nk")
    assert "sequence: 7" in records[5] and records[5].endswith("payload: txn")
    assert records[6].endswith("endTxnMarker: COMMIT coordinatorEpoch: 5")


def test_deep_iteration_prints_record_metadata_without_payloads(segment):
    _, output = dump(str(segment), "--deep-iteration")
    records = [line for line in output.splitlines() if line.startswith("| ")]
    assert len(records) == 7
    assert not any("payload:" in line or " key:" in line for line in records)


def test_without_flags_no_records_are_printed(segment):
    _, output = dump(str(segment))
    assert not any(line.startswith("|") for line in output.splitlines())


def test_torn_tail_prints_valid_batches_and_the_remainder(tmp_path):
    data = segment_bytes()
    extra = build_batch([Record(timestamp=NOW, value=b"torn" * 20)], base_offset=107)
    path = tmp_path / SEGMENT
    path.write_bytes(data + bytes(extra[:70]))
    status, output = dump(str(path), "--records")
    lines = output.splitlines()
    assert status == 0
    assert sum(1 for line in lines if line.startswith("baseOffset:")) == 4
    assert lines[-1] == (f"Found 70 invalid bytes at the end of {SEGMENT}: partial batch at "
                         f"position {len(data)} (needs {len(extra)} bytes, 70 remain)")


def test_zero_filled_tail_is_reported_as_invalid_bytes(tmp_path):
    path = tmp_path / SEGMENT
    path.write_bytes(segment_bytes() + bytes(4096))
    _, output = dump(str(path))
    assert output.splitlines()[-1].startswith(
        f"Found 4096 invalid bytes at the end of {SEGMENT}: batch length 0 at position")


def test_short_tail_below_a_header_is_reported(tmp_path):
    path = tmp_path / SEGMENT
    path.write_bytes(segment_bytes() + b"\x00" * 20)
    _, output = dump(str(path))
    assert output.splitlines()[-1] == (
        f"Found 20 invalid bytes at the end of {SEGMENT}: 20 bytes are less than a batch header")


def test_flipped_byte_shows_isvalid_false_and_dumping_goes_on(tmp_path):
    data = bytearray(segment_bytes())
    data[70] ^= 0xFF  # inside the first batch's records
    path = tmp_path / SEGMENT
    path.write_bytes(bytes(data))
    _, output = dump(str(path))
    batches = [fields(line) for line in output.splitlines() if line.startswith("baseOffset:")]
    assert [b["isvalid"] for b in batches] == ["false", "true", "true", "true"]


def test_undecodable_records_are_reported_per_batch(tmp_path):
    data = bytearray(segment_bytes())
    first_size = int(fields(dump_lines_of(data, tmp_path)[2])["size"])
    data[first_size + 61] ^= 0xFF  # the zstd frame magic of the second batch
    path = tmp_path / SEGMENT
    path.write_bytes(bytes(data))
    _, output = dump(str(path), "--records")
    errors = [line for line in output.splitlines() if "cannot decode" in line]
    assert len(errors) == 1 and "decompress" in errors[0]
    assert sum(1 for line in output.splitlines() if line.startswith("| offset:")) == 5


def dump_lines_of(data: bytes, tmp_path) -> list[str]:
    path = tmp_path / "probe" / SEGMENT
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(bytes(data))
    return dump(str(path))[1].splitlines()


def test_offset_index_entries_print_absolute_offsets_and_stop_at_preallocated_zeros(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    entries = [(0, 0), (37, 4120), (80, 8300)]
    path.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries) + bytes(8 * 5))
    status, output = dump(str(path))
    lines = output.splitlines()
    assert status == 0
    assert lines[1:4] == ["offset: 100 position: 0", "offset: 137 position: 4120",
                          "offset: 180 position: 8300"]
    assert lines[4] == "Entries 3..7 are zero (preallocated, unwritten): end of index"


def test_time_index_entries_print_timestamp_and_offset(tmp_path):
    path = tmp_path / "00000000000000000100.timeindex"
    path.write_bytes(struct.pack(">qi", NOW, 2) + struct.pack(">qi", NOW + 30, 6) + b"\x01\x02")
    _, output = dump(str(path))
    lines = output.splitlines()
    assert lines[1:3] == [f"timestamp: {NOW} offset: 102", f"timestamp: {NOW + 30} offset: 106"]
    assert lines[3] == ("Found 2 trailing bytes at the end of 00000000000000000100.timeindex: "
                        "not a whole 12-byte entry")


def test_empty_index_says_so(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"")
    assert dump(str(path))[1].splitlines()[1] == f"{path} is empty."


def test_missing_file_returns_1_and_later_files_still_dump(tmp_path, segment, capsys):
    status, output = dump(str(tmp_path / "missing.log"), str(segment))
    assert status == 1
    assert "cannot read" in capsys.readouterr().err
    assert output.count("baseOffset:") == 4


def test_a_file_cut_back_while_being_read_ends_the_dump_cleanly(tmp_path):
    """A live broker may cut a segment back (a failed append, a follower's
    truncation) after the dump took its size: the bytes past the cut are
    reported as gone, not read as a batch."""
    data = segment_bytes()
    path = tmp_path / SEGMENT
    path.write_bytes(data)
    with open(path, "rb") as file:
        found = list(dump_log._read_batches(file.fileno(), len(data) + 200))
    assert [batch is not None for _, batch, _ in found] == [True] * 4 + [False]
    assert found[-1][0] == len(data) and "shrank" in found[-1][2]
