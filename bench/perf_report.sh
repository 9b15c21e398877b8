#!/bin/bash
# The committed perf_reports/: every sweep on this machine, then the Spark
# report. Appends to perf_reports/runs.jsonl (delete it for a fresh report).
#   bash bench/perf_report.sh            # ~40 min on 2 cores
#   ROUNDS=1 CODEC_ROUNDS=1 bash bench/perf_report.sh   # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
KCORE=${KCORE:-.venv/bin/kcore}
OUT=${OUT:-perf_reports/runs.jsonl}
ROUNDS=${ROUNDS:-5}
CODEC_ROUNDS=${CODEC_ROUNDS:-3}
SWEEP_ROUNDS=${SWEEP_ROUNDS:-3}
W16="--workload 1-topic-16-partitions-1kb-max --workload 1-topic-16-partitions-1kb-20k"

$KCORE bench sweep peers $W16 --rounds "$ROUNDS" --out "$OUT"
$KCORE bench sweep codecs --workload codec-1kb-max --rounds "$CODEC_ROUNDS" --out "$OUT"
$KCORE bench sweep durability $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
$KCORE bench sweep disk $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
$KCORE bench sweep network $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
$KCORE bench sweep peers --workload 1-topic-100-partitions-1kb-4p-4c-max --rounds "$SWEEP_ROUNDS" --out "$OUT"
NOTES=(); [ -f perf_reports/notes.md ] && NOTES=(--notes perf_reports/notes.md)
$KCORE bench report "$OUT" --out perf_reports "${NOTES[@]}"
