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

# packed_steps NAME: for a script run on the GPU machine with OUT set to the device tool's folder. The steps
# write into a folder of their own (OUT from here on) and DEST is the tool's: the tool brings back at most 8
# files, so after each step every output is packed into $DEST/results.tgz (a time limit keeps what ran), with
# summary.txt beside it (pack). Also want NAME (false if SKIP names it), and steps.txt opened with the date, the
# bundle, the cores and the GPU. Only the scripts that call it get these.
packed_steps() {
  DEST=${OUT:?set OUT to the folder for the outputs}
  OUT=$(mktemp -d "/tmp/$1.XXXXXX")
  {
    date -u; cat .gpu/INFO 2>/dev/null; nproc
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
  } > "$OUT/steps.txt"
  pack() { tar czf "$DEST/results.tgz" -C "$OUT" . 2>/dev/null; cp "$OUT/summary.txt" "$DEST/" 2>/dev/null; }
  want() { case " ${SKIP:-} " in *" $1 "*) return 1 ;; *) return 0 ;; esac; }
  eval "$(declare -f step | sed '1s/^step/run_one_step/')" # step as above, then pack
  step() { run_one_step "$@"; pack; }
}
