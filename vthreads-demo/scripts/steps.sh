# steps.sh: the step runner both measure scripts source. Each script sets OUT; LABEL_SKIP (default 0)
# is how many leading words of a step's command its label leaves out (the sim script's java prefix).
failed=0
# step NAME FILE LIMIT_S COMMAND...: runs COMMAND under timeout, its stdout tee'd to $OUT/FILE.
step() {
  local name=$1 file=$2 limit=$3
  shift 3
  echo "== $name: ${*:$(( ${LABEL_SKIP:-0} + 1 ))} (limit ${limit} s)" | tee -a "$OUT/steps.txt"
  echo "== $name" >> "$OUT/stderr.log"
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@" 2> >(tee -a "$OUT/stderr.log" >&2) | tee "$OUT/$file"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "== $name: exit code $rc (time limit of ${limit} s reached) after $((SECONDS - t0)) s" | tee -a "$OUT/steps.txt"
  else
    echo "== $name: exit code $rc after $((SECONDS - t0)) s" | tee -a "$OUT/steps.txt"
  fi
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
