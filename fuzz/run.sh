#!/usr/bin/env bash
# Builds vispec's fuzz targets (fuzz/CMakeLists.txt: clang, libFuzzer, AddressSanitizer, UBSan) and runs each
# over its corpus, fuzz/corpus/<target>/, plus a bounded number of mutations: deterministic (a fixed seed and a
# fixed number of runs), so CI and a developer see the same inputs. Exits non-zero on any finding, naming the
# target and the input that caused it (saved under the build directory).
#   bash fuzz/run.sh                          what CI runs (ctest fuzz_smoke): every target, 3000 inputs each
#   bash fuzz/run.sh --runs 0 --seconds 600 fuzz_journal    a long run of one target (runs 0: no limit)
#   bash fuzz/run.sh --keep ...               new inputs that reach new code are added to fuzz/corpus/<target>/
#   bash fuzz/run.sh --mutate-hdf5 fuzz_distill_reader   mutate HDF5 inputs too (finds libhdf5's own bugs)
# A crash found this way becomes a test: its input goes into fuzz/corpus/<target>/ (so every run replays it)
# and the fix into the reader.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/fuzz runs=3000 seconds=0 keep=0 mutate_hdf5=0 targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --mutate-hdf5) mutate_hdf5=1; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_job_config fuzz_model_config fuzz_prompts fuzz_npy fuzz_safetensors fuzz_torch_checkpoint fuzz_journal fuzz_tar
  fuzz_image fuzz_distill_reader)

if ! command -v clang++ > /dev/null; then  # e.g. the GPU machine; scripts/setup.sh installs it everywhere else
  echo "SKIP: no clang++ here (the fuzz targets need clang and libclang-rt-14-dev: scripts/setup.sh)"
  exit 77
fi
cmake -S fuzz -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; echo "fuzz: configure failed (needs clang and libclang-rt-14-dev: scripts/setup.sh)"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$build.build.log" 2>&1 \
  || { tail -40 "$build.build.log"; echo "fuzz: build failed"; exit 1; }

# Mutating HDF5 files finds hangs and crashes inside libhdf5 1.10.8 itself (fuzz/hdf5-library-findings/),
# which no change in vispec can fix: by default this target replays its corpus without mutations.
replay_only=(fuzz_distill_reader)

status=0
for t in "${targets[@]}"; do
  corpus=fuzz/corpus/${t#fuzz_}
  fresh=$(mktemp -d)  # libFuzzer adds new inputs to the first directory: a scratch one unless --keep
  [ $keep -eq 1 ] && new=$corpus || new=$fresh
  mkdir -p "$build/crashes/$t"
  args=(-seed=1 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/crashes/$t/")
  if [[ " ${replay_only[*]} " == *" $t "* && $mutate_hdf5 -eq 0 ]]; then
    args+=(-runs=0)  # with corpus directories: every input once, nothing mutated
  else
    [ "$runs" -gt 0 ] && args+=(-runs="$runs")
    [ "$seconds" -gt 0 ] && args+=(-max_total_time="$seconds")
  fi
  if "$build/$t" "${args[@]}" "$new" "$corpus" > "$build/$t.log" 2>&1; then
    echo "fuzz: $t ok ($(ls "$corpus" | wc -l) corpus inputs, $(grep -o 'number_of_executed_units: [0-9]*' "$build/$t.log" | grep -o '[0-9]*$') inputs run)"
  elif grep -q "Test unit written" "$build/$t.log"; then
    status=1
    grep -E "ERROR|SUMMARY|uncaught|Test unit written|terminate called|what\(\)" "$build/$t.log" | head -8
    echo "fuzz: $t FOUND A CRASH: the input is in $build/crashes/$t/ (full log: $build/$t.log)"
  else
    status=1
    tail -5 "$build/$t.log"
    echo "fuzz: $t did not run (full log: $build/$t.log)"
  fi
  rm -rf "$fresh"
done
exit $status
