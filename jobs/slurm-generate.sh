#!/bin/bash
# Generate a job's images on a Slurm cluster, one rank per GPU, and requeue itself when the time limit comes:
#   sbatch jobs/slurm-generate.sh jobs/my-job.yaml
#   sbatch jobs/slurm-generate.sh OUT               # a run's output directory: the job it keeps (OUT/job.yaml)
# Five minutes before the limit Slurm sends SIGUSR1 to this script, which forwards it to srun (and srun to
# every rank). The ranks stop taking units, abandon the one in hand at its next batch, rank 0 flushes the
# journal, and vispec exits 4 (kExitInterrupted); this script then requeues the job, and the requeued run
# resumes from the journal. Exit codes (README "Exit codes"): 0 done, 2 bad input or output directory,
# 3 internal error, 4 interrupted (resumable), 5 done but some prompt lines were skipped (OUT/errors.jsonl).
#SBATCH --job-name=vispec
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=vispec-%j.log
set -u
job=${1:?usage: sbatch jobs/slurm-generate.sh JOB.yaml|OUT}
vispec=${VISPEC:-./build/vispec}

# Each task is one MPI rank (PMI/PMIx from srun); vispec binds local rank r to GPU r mod visible GPUs, and rank 0's
# log names every rank's device ("rank 3 decodes on cuda:3 (NVIDIA H100 80GB HBM3)"; summary.json's per_rank too).
# If srun's default PMI is not one your MPI was built with, every task would be a world of its own: vispec then
# stops in one line ("srun started 16 tasks ... MPI world of 1"); add --mpi=pmix (srun --mpi=list shows the
# choices). device: auto (the job file's default) stops in one line on a node whose GPUs it cannot use (an NVIDIA
# driver older than the 580 series for the CUDA 13 build): fix the node, or set device: cpu to decode on CPUs.
# A requeue onto another GPU model is refused: the device model is part of the job's identity (docs/cluster.md).
# With mpirun instead: mpirun -np $SLURM_NTASKS "$vispec" run "$job" (mpirun forwards SIGUSR1 too; on SIGTERM
# it stops the ranks cleanly as well, but then exits 1 itself, so prefer SIGUSR1 for the requeue test).
srun --kill-on-bad-exit=1 "$vispec" run "$job" &
pid=$!
trap 'echo "vispec: time limit near, stopping the job cleanly"; kill -USR1 "$pid"' USR1
status=0
while :; do
  wait "$pid"; status=$?
  kill -0 "$pid" 2>/dev/null || break  # wait returned because of the trap: srun is still finishing
done
case $status in
  0) echo "vispec: job complete" ;;
  4) echo "vispec: interrupted, requeueing"; scontrol requeue "$SLURM_JOB_ID" ;;
  5) echo "vispec: job complete, but some prompt lines were skipped: see OUT/errors.jsonl" ;;
  *) echo "vispec: failed with exit code $status"; exit "$status" ;;
esac
