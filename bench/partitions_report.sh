#!/bin/bash
# The figures of perf_reports/partitions/: a broker with thousands of
# partitions (restart after SIGKILL and after a clean stop, RSS and
# descriptors per partition, Metadata latency; bench/bench_partitions.py),
# then the OMB 4-producer/4-consumer shape over 16, 100 and 1,000 partitions
# against kcore and Kafka 0.9 in the same run, interleaved. The broker runs
# from a snapshot of HEAD, as in perf_report.sh.
#   bash bench/partitions_report.sh
#   PARTITIONS="1000 5000" ROUNDS=1 OUT_DIR=/tmp/p bash bench/partitions_report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
KCORE=${KCORE:-$PWD/.venv/bin/kcore}
OUT_DIR=${OUT_DIR:-perf_reports/partitions}
# 20,000 partitions need 20,000 descriptors for their active segments alone
# (Kafka's layout: one open .log per segment); this machine's hard
# RLIMIT_NOFILE is 20,000 and cannot be raised here, so 18,000 is the top.
PARTITIONS=${PARTITIONS:-1000 5000 10000 18000}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT_DIR"

source bench/snapshot.sh

# The partitions bench starts its brokers with this interpreter: from the snapshot.
(cd "$SNAP" && PYTHONPATH=$SNAP "$PY" -m bench.bench_partitions --partitions $PARTITIONS \
    --unflushed-mb 100 --out "$OLDPWD/$OUT_DIR/partitions.jsonl")
(cd "$SNAP" && PYTHONPATH=$SNAP "$PY" -m bench.bench_partitions --partitions 10000 \
    --unflushed-mb 100 --override num.recovery.threads.per.data.dir=2 \
    --out "$OLDPWD/$OUT_DIR/partitions.jsonl")
$KCORE bench sweep peers --only kcore,kafka09 --rounds "$ROUNDS" \
    --workload 1-topic-16-partitions-1kb-4p-4c-max \
    --workload 1-topic-100-partitions-1kb-4p-4c-max \
    --workload 1-topic-1000-partitions-1kb-4p-4c-max \
    --out "$OUT_DIR/omb.jsonl" || echo "some OMB runs failed (see $OUT_DIR/omb.jsonl)"
