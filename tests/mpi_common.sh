# Shared by the MPI / resume tests: a small job on the embedded model (18 samples in 5 units of 4, batches of 3,
# one thread per rank) and checks on its outputs. Sourced with $vispec and $src set; sets $py and $work.
# The Python that reads outputs back (numpy, h5py): Debian's by default, the GPU machine's via CMake there.
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
fail() { echo "FAIL: $*"; exit 1; }

write_job() {  # write_job DIR
  mkdir -p "$1"
  printf 'trouser\nbag\nsneaker\ndress\ncoat\nsandal\n' > "$1/prompts.txt"
  cat > "$1/job.yaml" <<YAML
model: $src/configs/fmnist.yaml
prompts: prompts.txt
decoder: {name: ar, cfg_scale: 2.0}
images_per_prompt: 3
unit_size: 4
batch_size: 3
threads: 1
seed: 7
out: $1/out
YAML
}

# same_outputs A B: identical PNG and token bytes, identical metrics apart from timings (by sample: a resumed
# run's metrics.jsonl holds each run's units after the earlier runs', scheduler/metrics_file.h), a complete
# journal without duplicates in both.
same_outputs() {
  diff -r "$1/images" "$2/images" > /dev/null || { echo "FAIL: images differ: $1 $2"; return 1; }
  diff -r "$1/tokens" "$2/tokens" > /dev/null || { echo "FAIL: tokens differ: $1 $2"; return 1; }
  "$py" - "$1" "$2" <<'PY'
import json, sys
def metrics(d):
    rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
    for r in rows:
        for k in ("wall_ms",):
            r.pop(k)
    return sorted(rows, key=lambda r: r["sample_id"])
def units(d):
    lines = [json.loads(l) for l in open(f"{d}/journal.jsonl")][1:]
    ids = [l["unit"] for l in lines]
    assert len(ids) == len(set(ids)), f"{d}: duplicated units in the journal: {ids}"
    return sorted(ids)
a, b = sys.argv[1:3]
assert metrics(a) == metrics(b), f"metrics differ: {a} {b}"
assert len(metrics(a)) == 18, len(metrics(a))
assert units(a) == units(b) == list(range(5)), (units(a), units(b))
for d in (a, b):
    s = json.load(open(f"{d}/summary.json"))
    assert s["complete"] and s["images"] == 18, s
PY
}

journal_units() { [ -f "$1/journal.jsonl" ] && echo $(( $(wc -l < "$1/journal.jsonl") - 1 )) || echo 0; }
