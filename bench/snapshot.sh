# Sourced by the report scripts: build a snapshot of HEAD (git archive +
# native build) in $SNAP and point the harness's kcore at it
# (KCORE_BENCH_SOURCE), so working-tree edits made during a long run do not
# change what is measured. Needs $PY; removes the snapshot on exit.
SNAP=$(mktemp -d /tmp/kcore-bench-src-XXXXXX)
trap 'rm -rf "$SNAP"' EXIT
git archive HEAD | tar -x -C "$SNAP"
git rev-parse --short HEAD > "$SNAP/.revision"
(cd "$SNAP" && "$PY" setup.py -q build_ext --inplace > build.log 2>&1)
export KCORE_BENCH_SOURCE=$SNAP
