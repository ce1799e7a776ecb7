#!/usr/bin/env bash
# Runs the libFuzzer targets for a while each: tests/fuzz/run.sh [SECONDS] [TARGET...]
#
#   SECONDS  per target (default 30)
#   TARGET   lease_json watch_stream status kubeconfig config_yaml duration http_request
#            exec_credential etcd_answers (default: all)
#
# Builds the `fuzz` preset first if needed (clang++, see README.md here). Each target fuzzes a
# temporary COPY of its seed corpus (tests/fuzz/corpus/<target>), so the committed corpus never
# grows. Crashing inputs are kept in build/fuzz/artifacts/<target>/ (reproduce with
# build/fuzz/tests/fuzz/fuzz_<target> FILE). Exits non-zero if any target crashed, leaked, timed
# out or failed a property check. Environment: LEASEHOLD_FUZZ_PARALLEL=N runs N targets at once
# (default 2, at most one per core); LEASEHOLD_FUZZ_FLAGS adds libFuzzer flags (e.g. "-dict=F");
# LEASEHOLD_FUZZ_KEEP_CORPUS=DIR keeps the grown corpora in DIR/<target>.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
all_targets=(lease_json watch_stream status kubeconfig config_yaml duration http_request
  exec_credential etcd_answers)

seconds=${1:-30}
if [[ $# -gt 0 ]]; then shift; fi
if ! [[ $seconds =~ ^[0-9]+$ ]] || [[ $seconds -eq 0 ]]; then
  echo "usage: $0 [SECONDS] [TARGET...]   targets: ${all_targets[*]}" >&2
  exit 2
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all_targets[@]}"); fi
for target in "${targets[@]}"; do
  if [[ ! -d tests/fuzz/corpus/$target ]]; then
    echo "run.sh: unknown target '$target' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

build=build/fuzz
started=$SECONDS
if [[ ! -f $build/CMakeCache.txt ]]; then cmake --preset fuzz; fi
cmake --build --preset fuzz
echo "run.sh: fuzz build ready after $((SECONDS - started)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r -a extra_flags <<<"${LEASEHOLD_FUZZ_FLAGS:-}"

# One target: fuzz a copy of its corpus, leave "<result> <executions> <exec/s> <coverage>" in
# $work/<target>.result and the libFuzzer output in $work/<target>.log.
run_target() {
  local target=$1
  local corpus=$work/corpus/$target
  local artifacts=$build/artifacts/$target
  local log=$work/$target.log
  mkdir -p "$(dirname "$corpus")" "$artifacts"
  cp -r "tests/fuzz/corpus/$target" "$corpus"
  local result=ok
  # -timeout: one input taking longer is a hang (the HTTP target gives up on its own after 10 s).
  if ! "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "${extra_flags[@]}" "$corpus" >"$log" 2>&1; then
    result=FAILED
  fi
  local executions per_second coverage
  executions=$(awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}' "$log")
  per_second=$(awk '/stat::average_exec_per_sec/ {n += $2} END {print n + 0}' "$log")
  coverage=$(grep -aE '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 |
    grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || true)
  echo "$result $executions $per_second $coverage" >"$work/$target.result"
  if [[ -n ${LEASEHOLD_FUZZ_KEEP_CORPUS:-} ]]; then
    mkdir -p "$LEASEHOLD_FUZZ_KEEP_CORPUS"
    rm -rf "${LEASEHOLD_FUZZ_KEEP_CORPUS:?}/$target"
    cp -r "$corpus" "$LEASEHOLD_FUZZ_KEEP_CORPUS/$target"
  fi
}

# Targets run side by side, one per core (at most LEASEHOLD_FUZZ_PARALLEL, default 2): CI's
# `run.sh 30` then takes about 2.5 minutes for the 9 targets on 2 cores.
parallel=${LEASEHOLD_FUZZ_PARALLEL:-2}
cores=$(nproc)
if [[ $parallel -gt $cores ]]; then parallel=$cores; fi
if [[ $parallel -lt 1 ]]; then parallel=1; fi
echo "run.sh: ${#targets[@]} target(s), ${seconds} s each, ${parallel} at a time"
running=0
for target in "${targets[@]}"; do
  if [[ $running -ge $parallel ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

failed=()
printf '%-16s %-8s %12s %9s %s\n' target result executions exec/s "coverage / corpus"
for target in "${targets[@]}"; do
  read -r result executions per_second coverage <"$work/$target.result" ||
    result=FAILED executions=0 per_second=0 coverage=
  printf '%-16s %-8s %12s %9s %s\n' "$target" "$result" "$executions" "$per_second" "$coverage"
  if [[ $result != ok ]]; then failed+=("$target"); fi
done
for target in "${failed[@]}"; do
  artifacts=$build/artifacts/$target
  echo "---- $target: last lines of its log ($(find "$artifacts" -type f | wc -l) file(s) in $artifacts)"
  tail -n 60 "$work/$target.log"
  echo "----"
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run.sh: ${#targets[@]} target(s), ${seconds} s each, no crashes"
