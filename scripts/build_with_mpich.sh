#!/usr/bin/env bash
# Proves the README's recipe for building against a site's MPI ("Installing on a cluster") with Debian's MPICH
# standing in for the site's: installs MPICH beside OpenMPI (Debian's alternatives keep OpenMPI the default),
# configures a separate build directory with MPICH's compiler wrapper, builds vispec, checks that the binary
# links MPICH and not OpenMPI, and runs the demo job on 2 ranks with MPICH's launcher, whose token files must
# equal a 1-rank run's. About 15 minutes on 2 cores (a whole build).
#   bash scripts/build_with_mpich.sh [BUILD_DIR]      (default build-mpich)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-mpich}
fail() { echo "FAIL: $*"; exit 1; }
if [ ! -x /usr/bin/mpicc.mpich ]; then
  [ "$(id -u)" -eq 0 ] || fail "MPICH is not installed and installing it needs root: apt-get install mpich libmpich-dev"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mpich libmpich-dev > /dev/null
fi
[ "$(readlink -f /usr/bin/mpicc)" != /usr/bin/mpicc.mpich ] || echo "note: mpicc now points to MPICH (update-alternatives --config mpi)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVISPEC_BUILD_TESTS=OFF -DMPI_C_COMPILER=/usr/bin/mpicc.mpich \
  > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; fail "configure"; }
grep "Found MPI_C" "$build.configure.log"
cmake --build "$build" -j"$(nproc)" --target vispec > "$build.build.log" 2>&1 || { tail -30 "$build.build.log"; fail "build"; }
libs=$(ldd "$build/vispec")
echo "$libs" | grep -q "libmpich" || fail "the binary does not link MPICH: $(echo "$libs" | grep -i mpi)"
! echo "$libs" | grep -q "libmpi.so.40" || fail "the binary links OpenMPI's libmpi too"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
job=(jobs/demo.yaml --set images_per_prompt=1 --set unit_size=2 --set batch_size=2 --set threads=1 --set device=cpu)
"$build/vispec" run "${job[@]}" --out "$out/one" 2> "$out/one.log" || { cat "$out/one.log"; fail "1 rank"; }
mpiexec.mpich -n 2 "$build/vispec" run "${job[@]}" --out "$out/two" 2> "$out/two.log" || { cat "$out/two.log"; fail "2 ranks"; }
grep -q "2 rank(s)" "$out/two.log" || { cat "$out/two.log"; fail "MPICH's launcher did not make a world of 2"; }
diff -r "$out/one/tokens" "$out/two/tokens" > /dev/null || fail "2 MPICH ranks wrote other tokens than 1"
echo "ok: vispec built against MPICH ($(echo "$libs" | grep -o 'libmpich[^ ]*' | head -1)); 2 ranks under mpiexec.mpich wrote the 1-rank tokens"
