"""`kcore delete-records`: move partitions' log start offsets forward, like
kafka-delete-records.sh, with its JSON file.

    kcore delete-records --offset-json-file F [--timeout-ms MS]

The file: ``{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}``
(``version`` may be left out; 1 is the only one). Records below each
offset are deleted; -1 means the partition's high watermark. As Kafka's
tool, it prints ``Executing records delete operation``, then per partition
``partition: t-0<TAB>low_watermark: 3`` or ``partition: t-0<TAB>error: NAME``.
A partition named twice is refused before anything is sent. Exit status:
0 when every partition succeeded, 1 when one failed (Kafka's tool exits 0
and leaves the errors to the lines), 2 for bad usage or a bad file.
"""
from __future__ import annotations

import sys

from kcore.cli.client_commands import EXIT_ERROR, EXIT_USAGE, _client, _run, connection_arguments
from kcore.cli.reassign import PlanError, _load, _read
from kcore.client import Admin
from kcore.client.admin import DEFAULT_TIMEOUT_MS
from kcore.client.errors import error_name
from kcore.protocol.errors import ErrorCode

Partition = tuple[str, int]


def add_parser(commands) -> None:
    parser = commands.add_parser("delete-records", parents=[connection_arguments()],
                                 help="delete the records of partitions below given offsets")
    parser.add_argument("--offset-json-file", required=True, metavar="FILE",
                        help='{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}')
    parser.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS,
                        help="how long the leaders wait for their followers (default 30000)")
    parser.set_defaults(run=run)


def run(args) -> int:
    try:
        offsets = parse_offsets(_read(args.offset_json_file, "--offset-json-file"))
    except PlanError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _run(_delete(args, offsets))


def parse_offsets(text: str) -> dict[Partition, int]:
    """(topic, partition) -> offset, in file order (Kafka's DeleteRecordsCommand
    rules); PlanError for a file that does not parse."""
    entries = _load(text).get("partitions")
    if not isinstance(entries, list):
        raise PlanError('missing "partitions" list')
    offsets: dict[Partition, int] = {}
    duplicates: list[str] = []
    for entry in entries:
        try:
            topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
        except (TypeError, KeyError) as exc:
            raise PlanError(f"each partition needs topic, partition and offset: {entry!r}") from exc
        if not isinstance(topic, str) or not all(isinstance(n, int) and not isinstance(n, bool)
                                                 for n in (partition, offset)):
            raise PlanError(f"topic must be a string, partition and offset integers: {entry!r}")
        if (topic, partition) in offsets:
            duplicates.append(f"{topic}-{partition}")
        offsets[(topic, partition)] = offset
    if duplicates:
        raise PlanError(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return offsets


async def _delete(args, offsets: dict[Partition, int]) -> int:
    print("Executing records delete operation")
    async with _client(args) as client:
        results = await Admin(client).delete_records(offsets, timeout_ms=args.timeout_ms)
    print("Records delete operation completed:")
    failed = False
    for (topic, partition), (code, low_watermark) in results.items():
        if code == ErrorCode.NONE:
            print(f"partition: {topic}-{partition}\tlow_watermark: {low_watermark}")
        else:
            failed = True
            print(f"partition: {topic}-{partition}\terror: {error_name(code)}")
    return EXIT_ERROR if failed else 0
