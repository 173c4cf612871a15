# Shared by the cluster tests (sourced): the cluster's environment, a scratch directory that is
# removed on exit, a hermetic environment for accel-launch, and the checksum comparison.
# Expects: cluster_dir launcher train (set by the sourcing script).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../testing/skip.sh"
if [[ ! -f $cluster_dir/cluster.env ]]; then
  skip "no test cluster at $cluster_dir (tests/cluster/cluster.sh up failed or was skipped)"
fi
# shellcheck disable=SC1091
source "$cluster_dir/cluster.env"
work=$(mktemp -d "$cluster_dir/jobs/test.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT

# No config file, no ACCEL_* settings and no scheduler variables from the caller.
for var in $(env | grep -o '^\(ACCEL\|SLURM\|OMPI\|PMI\|PMIX\)_[A-Za-z0-9_]*' || true); do
  [[ $var == SLURM_CONF || $var == ACCEL_CLUSTER_DIR ]] || unset "$var"
done
export HOME=$work/home XDG_CACHE_HOME=$work/cache HF_HOME=$work/hf
mkdir -p "$HOME"

# A small MLP that trains in a few seconds; every comparison uses it.
sizes=(--input-dim 32 --hidden 64 --layers 3 --classes 4 --samples 512 --lr 0.01 --steps 20
       --optimizer sgd)

# Prints the last param_checksum in stdin.
checksum() { grep -o '"param_checksum": [-0-9.e+]*' | tail -n 1 | awk '{print $2}'; }

# Fails unless $1 and $2 agree to 1e-5 (relative).
same_checksum() {
  [[ -n $1 && -n $2 ]] || { echo "FAIL: missing checksum ('$1' vs '$2')"; return 1; }
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; s = b < 0 ? -b : b;
    if (d > 1e-5 * s) { print "FAIL: checksums differ: " a " vs " b; exit 1 } }'
}

# Prints the one-process checksum of a global batch of $1.
single_process_checksum() {
  timeout -s KILL 120 "$train" "${sizes[@]}" --batch-size "$1" | checksum
}

# Commands prefixed with "${tagged[@]}" carry CLUSTER_TEST_TAG, and so does everything they start
# (srun, sbatch and mpirun pass the environment on): tagged_pids prints those still alive, on any
# machine. The test's own shell and helpers do not carry it.
tag_with() { tag=$1; tagged=(env "CLUSTER_TEST_TAG=$tag"); }
tag_with "$work"
tagged_pids() {
  grep -lzx "CLUSTER_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}

# Fails when a tagged process is left (names them).
expect_no_tagged_pids() {
  local left
  left=$(tagged_pids | tr '\n' ' ')
  [[ -z $left ]] && return 0
  echo "FAIL: processes left behind:"
  for pid in $left; do ps -o pid=,args= -p "$pid" || true; done
  return 1
}

# Fails when `$1` (a file) lacks the fixed string $2.
expect_in() {
  grep -qF -- "$2" "$1" || { echo "FAIL: '$2' not in $1:"; cat "$1"; return 1; }
}

# Waits up to $2 seconds until $1 tagged processes named train.bin run (any machine).
wait_for_workers() {
  local want=$1 limit=$2 n pid
  for _ in $(seq $((limit * 5))); do
    n=0
    for pid in $(tagged_pids); do
      [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$3" ]] && n=$((n + 1))
    done
    ((n >= want)) && return 0
    sleep 0.2
  done
  echo "FAIL: $want $3 processes did not start within $limit s (found $n)"
  return 1
}

# Waits up to $1 seconds until no tagged process is left; prints the seconds it took.
wait_tagged_gone() {
  local start=$EPOCHREALTIME
  while [[ -n $(tagged_pids) ]]; do
    if (($(awk -v a="$EPOCHREALTIME" -v b="$start" -v l="$1" 'BEGIN { print (a - b > l) }'))); then
      awk -v a="$EPOCHREALTIME" -v b="$start" 'BEGIN { printf "%.1f\n", a - b }'
      return 1
    fi
    sleep 0.1
  done
  awk -v a="$EPOCHREALTIME" -v b="$start" 'BEGIN { printf "%.1f\n", a - b }'
}
