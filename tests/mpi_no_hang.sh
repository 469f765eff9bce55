#!/usr/bin/env bash
# No hang: a failure on any rank that the message protocol cannot carry (std::bad_alloc, a failing coordinator)
# ends the whole job within seconds with one line naming the rank and the cause, and so does one it carries
# (a filesystem or JSON error inside a worker's unit, on rank 0's worker thread or on rank 1); inputs that used to raise such
# failures (a journal line that is JSON but no unit record, a prompt line that is not UTF-8) are input errors
# with file and line. Real mpirun, 2 ranks; each case also without mpirun.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

# expect_failure NAME TEXT CMD...: CMD ends within 60 s, not with 0, and prints exactly one vispec error line,
# which contains TEXT.
expect_failure() {
  local name=$1 text=$2 status=0
  shift 2
  timeout 60 "$@" > /dev/null 2> "$work/$name.log" || status=$?
  [ $status -ne 124 ] || { cat "$work/$name.log"; fail "$name: still running after 60 s (a hang)"; }
  [ $status -ne 0 ] || fail "$name: exit 0"
  [ "$(grep -c 'vispec: error' "$work/$name.log")" -eq 1 ] || { cat "$work/$name.log"; fail "$name: not one vispec error line"; }
  grep 'vispec: error' "$work/$name.log" | grep -qF -- "$text" || { cat "$work/$name.log"; fail "$name: no '$text'"; }
  echo "ok: $name: exit $status: $(grep 'vispec: error' "$work/$name.log")"
}

d="$work/job"
write_job "$d"
for rank in 0 1; do
  expect_failure "bad_alloc-rank$rank" "rank $rank: internal error: std::bad_alloc" \
    env VISPEC_FAULT=bad-alloc@$rank "${MPIRUN[@]}" -np 2 -x VISPEC_FAULT "$vispec" run "$d/job.yaml" --new
done
expect_failure bad_alloc-alone "internal error: std::bad_alloc" env VISPEC_FAULT=bad-alloc@0 "$vispec" run "$d/job.yaml" --new
expect_failure coordinator "rank 0: internal error: injected coordinator failure" \
  env VISPEC_FAULT=coordinator-throws@1 "${MPIRUN[@]}" -np 2 -x VISPEC_FAULT "$vispec" run "$d/job.yaml" --new
expect_failure coordinator-alone "internal error: injected coordinator failure" \
  env VISPEC_FAULT=coordinator-throws@1 "$vispec" run "$d/job.yaml" --new

# A filesystem or JSON error inside a worker's unit, on rank 0's worker thread (unit 0) and on rank 1 (unit 1;
# the static schedule gives unit u to rank u mod 2): the protocol carries it, every rank stops, exit 3.
for unit in 0 1; do
  for kind in fs-error json-error; do
    what=$([ $kind = fs-error ] && echo "internal error: filesystem error: injected" || echo "internal error: [json.exception.parse_error")
    expect_failure "$kind-unit$unit" "rank $unit: $what" env VISPEC_FAULT=$kind@$unit \
      "${MPIRUN[@]}" -np 2 -x VISPEC_FAULT "$vispec" run "$d/job.yaml" --new --set schedule=static
  done
done
expect_failure fs-error-alone "internal error: filesystem error: injected" env VISPEC_FAULT=fs-error@2 "$vispec" run "$d/job.yaml" --new

# A journal line that is valid JSON but no unit record: an input error naming the file and line, on every path.
"$vispec" run "$d/job.yaml" --new 2> "$work/full.log" || { cat "$work/full.log"; fail "the reference run"; }
echo '{"foo":1}' >> "$d/out/journal.jsonl"
line=$(wc -l < "$d/out/journal.jsonl")
expect_failure journal-record "journal.jsonl:$line: not a unit record" "${MPIRUN[@]}" -np 2 "$vispec" run "$d/job.yaml"
expect_failure journal-record-alone "journal.jsonl:$line: not a unit record" "$vispec" run "$d/job.yaml"
# A unit record whose decoder counts are not counts (1.5 tokens, summed into summary.json): the same.
sed -i '$d' "$d/out/journal.jsonl"
tail -n 1 "$d/out/journal.jsonl" | "$py" -c 'import json, sys; r = json.load(sys.stdin); r["tokens"] = 1.5; print(json.dumps(r))' \
  >> "$d/out/journal.jsonl"
line=$(wc -l < "$d/out/journal.jsonl")
expect_failure journal-counts "journal.jsonl:$line: a unit record whose decoder counts" "$vispec" run "$d/job.yaml"

# A prompt line that is not UTF-8 is skipped like an unknown class (exit 5), its error record valid JSON.
printf 'trouser\nba\xffg\nsneaker\n' > "$d/prompts.txt"
status=0; timeout 60 "${MPIRUN[@]}" -np 2 "$vispec" run "$d/job.yaml" --new 2> "$work/utf8.log" || status=$?
[ $status -eq 5 ] || { cat "$work/utf8.log"; fail "non-UTF-8 prompt: expected exit 5, got $status"; }
"$py" - "$d/out" <<'PY'
import json, sys
out = sys.argv[1]
errors = [json.loads(l) for l in open(f"{out}/errors.jsonl")]
assert len(errors) == 1 and errors[0]["line"] == 2, errors
assert "prompt: not valid UTF-8 (byte 0xFF at column 3)" in errors[0]["error"], errors
summary = json.load(open(f"{out}/summary.json"))
assert summary["complete"] and summary["images"] == 6, summary  # 2 good prompts x 3 images
PY
echo "ok: a prompt line that is not UTF-8 is recorded and skipped (exit 5)"
