"""`kcore users`: SCRAM credentials, like
``kafka-configs --entity-type users --alter --add-config 'SCRAM-SHA-256=[password=...]'``.

    kcore users add NAME [--password P] [--mechanism M ...] [--iterations N]
    kcore users delete NAME [--mechanism M ...]
    kcore users list [NAME ...]

add stores credentials for both SCRAM mechanisms unless --mechanism names
some; without --password the password is read from the first line of
stdin (so it stays out of the process list). list prints each user's
mechanisms and iterations, never a secret. Broker errors print Kafka's
error name and exit 1.
"""
from __future__ import annotations

import sys

from kcore.cli.client_commands import _client, _run, connection_arguments
from kcore.cli.groups import _print_table
from kcore.client.users import UserAdmin
from kcore.security.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS


def add_parser(commands) -> None:
    common = connection_arguments()
    parser = commands.add_parser("users", help="add, delete and list SCRAM users")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)  # each action sets its own
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", parents=[common], help="add or replace a user's credentials")
    add.add_argument("name")
    add.add_argument("--password", help="the password (default: read the first line of stdin)")
    add.add_argument("--mechanism", action="append", choices=sorted(MECHANISMS),
                     help="SCRAM mechanism (repeatable; default: both)")
    add.add_argument("--iterations", type=int, default=MIN_ITERATIONS,
                     help=f"PBKDF2 iterations, {MIN_ITERATIONS}-{MAX_ITERATIONS} (default {MIN_ITERATIONS})")
    add.set_defaults(run=run_add)
    delete = actions.add_parser("delete", parents=[common], help="delete a user's credentials")
    delete.add_argument("name")
    delete.add_argument("--mechanism", action="append", choices=sorted(MECHANISMS),
                        help="SCRAM mechanism (repeatable; default: every one the user has)")
    delete.set_defaults(run=run_delete)
    listing = actions.add_parser("list", parents=[common], help="users and their SCRAM mechanisms")
    listing.add_argument("names", nargs="*")
    listing.set_defaults(run=run_list)


def run_add(args) -> int:
    password = args.password if args.password is not None else sys.stdin.readline().rstrip("\n")
    if not password:
        print("Error: empty password", file=sys.stderr)
        return 2

    async def go() -> int:
        async with _client(args) as client:
            await UserAdmin(client).upsert(args.name, password, args.mechanism or sorted(MECHANISMS),
                                           args.iterations)
        print(f"Added SCRAM credentials of user {args.name}")
        return 0
    return _run(go())


def run_delete(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            admin = UserAdmin(client)
            mechanisms = args.mechanism
            if not mechanisms:
                described = await admin.describe([args.name])
                mechanisms = [name for name, _ in described[0].mechanisms]
            await admin.delete(args.name, mechanisms)
        print(f"Deleted SCRAM credentials of user {args.name}: {', '.join(mechanisms)}")
        return 0
    return _run(go())


def run_list(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            users = await UserAdmin(client).describe(args.names or None)
        _print_table([("USER", "MECHANISM", "ITERATIONS")]
                     + [(u.user, name, iterations) for u in users for name, iterations in u.mechanisms])
        return 0
    return _run(go())
