"""Benchmark harness behind `kcore bench`: workloads from TOML files, real
clients (confluent-kafka) as load generators in their own processes, kcore
and peer brokers started per run, sweeps interleaved across configs, one
JSON line per run, and a PySpark job that aggregates them into
perf_reports/ (Markdown tables and PNG charts).

Modules: workload (files), payloads (corpora), loadgen (client process),
clients (harness side of it), brokers/peers (targets), builds (kcore at a
git commit, built on the side), network/proxy (veth namespaces, delaying
proxy), measure (/proc, page cache), idle (between rounds: write-back,
page cache, waiting for an idle machine), runner (one run), sweeps
(configs x rounds), compare (the regression gate: two builds, ratios),
report/charts (Spark aggregation).
"""
