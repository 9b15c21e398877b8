"""Shared fixtures for the unit tests of native kernels and the log."""
from __future__ import annotations

import hypothesis

# Bounded property tests: the machine is shared, each file stays under ~30 s.
hypothesis.settings.register_profile("kcore", max_examples=200, deadline=None)
hypothesis.settings.load_profile("kcore")
