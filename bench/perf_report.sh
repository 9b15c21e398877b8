#!/bin/bash
# The committed perf_reports/: every sweep on this machine, a profile of the
# broker under the 16-partition workloads, then the Spark report. Appends to
# $OUT (delete it for a fresh report). The broker runs from a snapshot of
# HEAD (git archive + native build), so working-tree edits made during the
# ~45 minutes do not change what is measured.
#   bash bench/perf_report.sh
#   ROUNDS=1 SWEEP_ROUNDS=1 CODEC_ROUNDS=1 REPORT_DIR=/tmp/r bash bench/perf_report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
KCORE=${KCORE:-.venv/bin/kcore}
REPORT_DIR=${REPORT_DIR:-perf_reports}
OUT=${OUT:-$REPORT_DIR/runs.jsonl}
ROUNDS=${ROUNDS:-5}
CODEC_ROUNDS=${CODEC_ROUNDS:-3}
SWEEP_ROUNDS=${SWEEP_ROUNDS:-3}
W16="--workload 1-topic-16-partitions-1kb-max --workload 1-topic-16-partitions-1kb-20k"
mkdir -p "$REPORT_DIR"

source bench/snapshot.sh
# A sweep exits 1 when some run failed; the failure is in the JSON lines and
# the report lists it, so the script goes on.
sweep() { $KCORE bench sweep "$@" || echo "sweep $1: some runs failed (see the report)"; }

sweep peers $W16 --rounds "$ROUNDS" --out "$OUT"
sweep codecs --workload codec-1kb-max --rounds "$CODEC_ROUNDS" --out "$OUT"
sweep durability $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
sweep disk $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
sweep network $W16 --rounds "$SWEEP_ROUNDS" --out "$OUT"
sweep peers --workload 1-topic-100-partitions-1kb-4p-4c-max --rounds "$SWEEP_ROUNDS" --out "$OUT"
$KCORE bench profile 1-topic-16-partitions-1kb-max 1-topic-16-partitions-1kb-20k --out "$REPORT_DIR/profiles"
NOTES=(); [ -f "$REPORT_DIR/notes.md" ] && NOTES=(--notes "$REPORT_DIR/notes.md")
$KCORE bench report "$OUT" --out "$REPORT_DIR" "${NOTES[@]}"
