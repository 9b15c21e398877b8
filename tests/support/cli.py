"""The kcore CLI as a subprocess of the tests' interpreter (kcore.testing.cli)."""
from kcore.testing.cli import CLI_TIMEOUT_S, kcore_cli, kcore_command

__all__ = ["CLI_TIMEOUT_S", "kcore_cli", "kcore_command"]
