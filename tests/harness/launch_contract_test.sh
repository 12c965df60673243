#!/usr/bin/env bash
# The multi-host launch contract, on loopback: `tide sync --worker` ranks
# started by OpenMPI's mpirun, and by hand with the variables Slurm and
# torchrun set, each run a verified update. Rank 0 hosts the rendezvous
# store on MASTER_ADDR:MASTER_PORT and writes the JSON, which names the rank
# environment it read. A corrupted shard under mpirun must fail the run.
# Skipped (77) only when mpirun is missing; the Slurm and torchrun runs
# still run first.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Only the launcher's variables may say who a rank is.
unset TIDE_RANK TIDE_WORLD_SIZE TIDE_MASTER_ADDR TIDE_MASTER_PORT TIDE_RUN_TOKEN \
  TIDE_STORE_EXTERNAL TIDE_LISTEN_ADDR RANK WORLD_SIZE MASTER_ADDR MASTER_PORT \
  SLURM_PROCID SLURM_NTASKS SLURM_JOB_ID SLURM_STEP_ID TORCHELASTIC_RUN_ID

# 8 ranks: 4 training, 4 inference.
N=8
args=(sync --worker --model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
      --cluster h100-ib-8x400:nodes=2 --backend tcp --strategy p2p --bucket 64KiB
      --chunk 16KiB --streams 1 --steps 2 --timeout 60)

# A port free now on loopback (rank 0 binds it moments later).
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

check_json() {  # file rank-env
  "$PY" - "$@" << 'PYEOF' || fail "json $1"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["rank_env"] == sys.argv[2], j.get("rank_env")
assert j["ranks"] == 8 and j["ranks_as"] == "processes", (j["ranks"], j["ranks_as"])
assert j["verified"] is True and j["verification"]["outcome"] == "bit-exact", j["verification"]
assert len(j["steps"]) == 2 and all(s["verified_bytes"] > 0 for s in j["steps"])
PYEOF
}

# Starts N ranks by hand, rank i with the variables that `vars i` prints,
# and waits for all of them; fails on any non-zero exit.
by_hand() {  # name vars-function
  local name=$1 mkvars=$2 i rc=0 p
  pids=()
  for ((i = 0; i < N; i++)); do
    # shellcheck disable=SC2046  # the function prints NAME=value words
    env $("$mkvars" $i) "$TIDE" "${args[@]}" --json "$dir/$name.json" > "$dir/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  if [ $rc -ne 0 ]; then
    tail -n 5 "$dir/$name".*.log
    fail "$name: a rank failed"
  fi
  check_json "$dir/$name.json" "$3"
  grep -q "bit-exact" "$dir/$name.0.log" || { cat "$dir/$name.0.log"; fail "$name: no result"; }
  echo "$name: 8 ranks, verified bit-exact"
}

# Slurm (srun sets SLURM_PROCID/NTASKS/JOB_ID/STEP_ID; the batch script
# exports MASTER_ADDR/PORT, e.g. the first host of the allocation).
port=$(free_port)
slurm_vars() {
  echo "SLURM_PROCID=$1 SLURM_NTASKS=$N SLURM_LOCALID=$1 SLURM_JOB_ID=4242 SLURM_STEP_ID=0"
  echo "MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
}
by_hand slurm slurm_vars Slurm

# torchrun (RANK/WORLD_SIZE/LOCAL_RANK, MASTER_ADDR/PORT, TORCHELASTIC_RUN_ID).
port=$(free_port)
torchrun_vars() {
  echo "RANK=$1 WORLD_SIZE=$N LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$N GROUP_RANK=0"
  echo "MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=tide-contract-$$"
}
by_hand torchrun torchrun_vars torchrun

if ! command -v mpirun > /dev/null; then
  echo "skipped: mpirun not installed (openmpi-bin; scripts/install-deps.sh); Slurm and torchrun passed"
  exit 77
fi
# OpenMPI: ranks from OMPI_COMM_WORLD_*, the store's port and the run token
# exported with -x. Root needs --allow-run-as-root (and, for OpenMPI 5, the
# confirmation variable); loopback only; no binding on an oversubscribed host.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() {  # json-file extra-args...
  local json=$1
  shift
  local p
  p=$(free_port)
  timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np $N \
    --mca oob_tcp_if_include lo --mca btl self \
    -x TIDE_MASTER_ADDR=127.0.0.1 -x TIDE_MASTER_PORT="$p" -x TIDE_RUN_TOKEN="mpi-$$-$p" \
    "$TIDE" "${args[@]}" --json "$json" "$@"
}
mpi "$dir/mpi.json" > "$dir/mpi.log" 2>&1 || { tail -n 30 "$dir/mpi.log"; fail "mpirun run"; }
check_json "$dir/mpi.json" OpenMPI
grep -q "bit-exact" "$dir/mpi.log" || { cat "$dir/mpi.log"; fail "mpirun: no result"; }
echo "mpirun: 8 ranks, verified bit-exact"

# The same under mpirun with one flipped byte in rank 5's shard: the run
# fails and says the shard was not bit-exact.
mpi "$dir/bad.json" --corrupt-rank 5 > "$dir/bad.log" 2>&1 && fail "mpirun: a corrupted shard passed"
"$PY" -c "import json; j=json.load(open('$dir/bad.json')); assert j['verification']['outcome']=='not bit-exact' and not j['verified'], j" ||
  { tail -n 20 "$dir/bad.log"; fail "mpirun: corrupted run's JSON"; }
echo "mpirun: a corrupted shard fails the run"
echo "PASS"
