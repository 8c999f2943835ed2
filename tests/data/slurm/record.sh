#!/usr/bin/env bash
# Records what the Slurm commands print for the cases the slurm executor has to tell apart, from
# a real cluster started by scripts/slurm-test-cluster.sh, into this directory:
#   CASE.COMMAND.out   the command's exact stdout (empty file when it printed nothing)
#   CASE.COMMAND.err   its exact stderr, only when there was any
#   index.tsv          one line per recording: file, exit code, command line
#   timing.txt         measured delays (start time, sacct lag, purge)
# Usage: tests/data/slurm/record.sh      (as root; takes about 3 minutes; overwrites the files)
# It starts and stops its own clusters under /tmp/cairn-slurm-record, a fixed path so that the
# paths inside the outputs do not change from one recording to the next.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CLUSTER="$ROOT/scripts/slurm-test-cluster.sh"
BASE=/tmp/cairn-slurm-record
WORK=$BASE/work
FMT_SQ='%i|%T|%r'
FMT_SQ_LONG='%i|%j|%T|%r|%M|%l|%S|%e|%N|%Z'
FMT_SA='JobID,State,ExitCode,Elapsed,Start,End'
FMT_SA_LONG='JobID,JobName,State,ExitCode,DerivedExitCode,Reason,Elapsed,Timelimit,Submit,Start,End,NodeList,WorkDir'

cleanup() { "$CLUSTER" stop "$BASE/acct" || true; "$CLUSTER" stop "$BASE/plain" || true; }
trap cleanup EXIT

rm -f "$HERE"/*.out "$HERE"/*.err "$HERE/index.tsv" "$HERE/timing.txt"
rm -rf "$BASE"
mkdir -p "$WORK"
printf 'file\texit\tcommand\n' >"$HERE/index.tsv"

# rec CASE.COMMAND cmd args... : runs the command, keeps stdout/stderr/exit code, never fails.
rec() {
  local name=$1 rc=0
  shift
  "$@" >"$HERE/$name.out" 2>"$HERE/$name.err" || rc=$?
  [ -s "$HERE/$name.err" ] || rm -f "$HERE/$name.err"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$*" >>"$HERE/index.tsv"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
note() { echo "$*" | tee -a "$HERE/timing.txt" >&2; }

state_of() { squeue -h -j "$1" -t all -o %T 2>/dev/null || true; }
# wait_state ID STATE [SECONDS]: until squeue shows the job in STATE.
wait_state() {
  local end=$((SECONDS + ${3:-30}))
  until [ "$(state_of "$1")" = "$2" ]; do
    [ "$SECONDS" -lt "$end" ] || { echo "job $1 never reached $2 (now $(state_of "$1"))" >&2; exit 1; }
    sleep 0.1
  done
}
# wait_final ID: until the job has left slurmctld's active states.
wait_final() {
  local end=$((SECONDS + ${2:-150})) s
  while :; do
    s=$(state_of "$1")
    case "$s" in PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | "") ;; *) return 0 ;; esac
    [ "$SECONDS" -lt "$end" ] || { echo "job $1 still $s" >&2; exit 1; }
    sleep 0.1
  done
}
# wait_sacct ID: until sacct knows the job's final state; prints how long that took.
wait_sacct() {
  local t0 s
  t0=$(now)
  while :; do
    s=$(sacct -n -P -X -j "$1" -o State 2>/dev/null || true)
    case "$s" in "" | PENDING | RUNNING | REQUEUED | RESIZING | SUSPENDED) sleep 0.05 ;; *) break ;; esac
  done
  elapsed "$t0" "$(now)"
}
# done_records CASE ID: everything that describes a finished job.
done_records() {
  rec "$1.squeue-done" squeue -h -j "$2" -o "$FMT_SQ"
  rec "$1.squeue-all" squeue -h -j "$2" -t all -o "$FMT_SQ"
  rec "$1.squeue-long" squeue -h -j "$2" -t all -o "$FMT_SQ_LONG"
  rec "$1.scontrol" scontrol show job -o "$2"
  rec "$1.sacct-X" sacct -n -P -X -j "$2" -o "$FMT_SA"
  rec "$1.sacct-steps" sacct -n -P -j "$2" -o "$FMT_SA"
  rec "$1.sacct-long" sacct -n -P -j "$2" -o "$FMT_SA_LONG"
}

# --- cluster with accounting (slurmdbd + MariaDB), where sacct works -------------------------
t0=$(now)
eval "$("$CLUSTER" start --accounting "$BASE/acct")"
note "start --accounting: $(elapsed "$t0" "$(now)") s"
rec version sinfo -V
rec sinfo sinfo -N -h -o '%N|%T|%c|%m|%G'
cd "$WORK"

# The time-limit case takes 60-90 s, so it runs while the others are recorded.
rec timeout.sbatch sbatch --parsable --job-name=timeout --time=1 --output=/dev/null --wrap='sleep 150'
timeout_id=$(cat "$HERE/timeout.sbatch.out")
wait_state "$timeout_id" RUNNING

# ok: exits 0 after 3 s; its own stdout/stderr files, named with %j, in a --chdir directory.
mkdir -p "$WORK/ok"
cat >"$WORK/ok.sh" <<'EOF'
#!/bin/bash
echo "hello from job $SLURM_JOB_ID on $SLURMD_NODENAME in $(pwd)"
echo "a line on stderr" >&2
sleep 3
date +%s.%N >"$SLURM_SUBMIT_DIR/ok.ended"
EOF
rec ok.sbatch sbatch --parsable --job-name=ok --chdir="$WORK/ok" --output=out-%j.txt \
  --error="$WORK/ok/err-%j.txt" "$WORK/ok.sh"
id=$(cat "$HERE/ok.sbatch.out")
wait_state "$id" RUNNING
rec ok.squeue-running squeue -h -j "$id" -o "$FMT_SQ"
rec ok.scontrol-running scontrol show job -o "$id"
rec ok.sacct-running sacct -n -P -j "$id" -o "$FMT_SA"
rec ok.squeue-json squeue --json -j "$id"
wait_final "$id"
note "ok: sacct had the final state $(wait_sacct "$id") s after squeue did"
note "ok: squeue showed COMPLETED $(elapsed "$(cat "$WORK/ok.ended")" "$(now)") s or less after the script's last command"
done_records ok "$id"
rec ok.job-stdout cat "$WORK/ok/out-$id.txt"
rec ok.job-stderr cat "$WORK/ok/err-$id.txt"
rec ok.scancel-done scancel "$id"
rec ok.scancel-v-done scancel -v "$id"

# exit3: the batch script exits 3.
rec exit3.sbatch sbatch --parsable --job-name=exit3 --output=/dev/null --wrap='echo failing; exit 3'
id=$(cat "$HERE/exit3.sbatch.out")
wait_final "$id"
note "exit3: sacct had the final state $(wait_sacct "$id") s after squeue did"
done_records exit3 "$id"

# signal: the batch script kills itself with SIGKILL (no scancel).
rec signal.sbatch sbatch --parsable --job-name=signal --output=/dev/null --wrap='kill -9 $$'
id=$(cat "$HERE/signal.sbatch.out")
wait_final "$id"
wait_sacct "$id" >/dev/null
done_records signal "$id"

# cancel: scancel while it runs.
rec cancel.sbatch sbatch --parsable --job-name=cancel --output=/dev/null --wrap='sleep 300'
id=$(cat "$HERE/cancel.sbatch.out")
wait_state "$id" RUNNING
t0=$(now)
rec cancel.scancel scancel "$id"
rec cancel.squeue-right-after squeue -h -j "$id" -t all -o "$FMT_SQ"
wait_final "$id"
note "cancel: squeue showed the final state $(elapsed "$t0" "$(now)") s after scancel"
note "cancel: sacct had it $(wait_sacct "$id") s later"
done_records cancel "$id"

# cancel-pending: scancel while it waits (held back by --begin).
rec cancel-pending.sbatch sbatch --parsable --job-name=cancel-pending --begin=now+3600 \
  --output=/dev/null --wrap='true'
id=$(cat "$HERE/cancel-pending.sbatch.out")
wait_state "$id" PENDING
sleep 1
rec cancel-pending.squeue-pending squeue -h -j "$id" -o "$FMT_SQ"
rec cancel-pending.sacct-pending sacct -n -P -j "$id" -o "$FMT_SA"
rec cancel-pending.scancel scancel "$id"
wait_final "$id"
wait_sacct "$id" >/dev/null
done_records cancel-pending "$id"

# mem: within --cpus-per-task=1 --mem=100M.
rec mem.sbatch sbatch --parsable --job-name=mem --cpus-per-task=1 --mem=100M --output=/dev/null \
  --wrap='echo small'
id=$(cat "$HERE/mem.sbatch.out")
wait_final "$id"
wait_sacct "$id" >/dev/null
done_records mem "$id"

# oom: grows to 400 MB under --mem=100M (tail -n 1 holds a line with no newline in memory);
# with no cgroup the jobacct poller (JobAcctGatherParams=OverMemoryKill) kills it.
rec oom.sbatch sbatch --parsable --job-name=oom --mem=100M --output="$WORK/oom-%j.txt" \
  --wrap='head -c 400M /dev/zero | tail -n 1 >/dev/null; echo tail exited $?'
id=$(cat "$HERE/oom.sbatch.out")
wait_final "$id" 60
wait_sacct "$id" >/dev/null
done_records oom "$id"
rec oom.job-output cat "$WORK/oom-$id.txt"

# gpu: this node has no GPU.
rec gpu.sbatch sbatch --parsable --job-name=gpu --gres=gpu:1 --wrap='true'

# unknown: a job id this cluster never had.
rec unknown.squeue squeue -h -j 999999 -o "$FMT_SQ"
rec unknown.scontrol scontrol show job -o 999999
rec unknown.sacct sacct -n -P -X -j 999999 -o "$FMT_SA"
rec unknown.scancel scancel 999999
rec unknown.scancel-v scancel -v 999999
rec badid.scancel scancel not-a-job-id

# timeout: submitted first, killed at its 1-minute limit.
wait_final "$timeout_id" 150
wait_sacct "$timeout_id" >/dev/null
done_records timeout "$timeout_id"
note "timeout: --time=1 sleep 150 ran for $(sacct -n -P -X -j "$timeout_id" -o Elapsed) before TIMEOUT"
cd /
"$CLUSTER" stop "$BASE/acct"

# --- cluster without accounting (the default), finished jobs purged after 2 s ----------------
t0=$(now)
eval "$(SLURM_TEST_MIN_JOB_AGE=2 "$CLUSTER" start "$BASE/plain")"
note "start (no accounting): $(elapsed "$t0" "$(now)") s"
cd "$WORK"
rec noacct.sbatch sbatch --parsable --job-name=noacct --output=/dev/null --wrap='exit 3'
id=$(cat "$HERE/noacct.sbatch.out")
wait_final "$id"
rec noacct.sacct sacct -n -P -X -j "$id" -o "$FMT_SA"
rec noacct.squeue-all squeue -h -j "$id" -t all -o "$FMT_SQ"
rec noacct.scontrol scontrol show job -o "$id"
t0=$(now)
end=$((SECONDS + 200))
while scontrol show job -o "$id" >/dev/null 2>&1 && [ "$SECONDS" -lt "$end" ]; do sleep 0.5; done
note "noacct: with MinJobAge=2 the finished job was purged $(elapsed "$t0" "$(now)") s after it ended"
rec noacct.squeue-purged squeue -h -j "$id" -t all -o "$FMT_SQ"
rec noacct.scontrol-purged scontrol show job -o "$id"
rec noacct.jobcomp cat "$BASE/plain/log/jobcomp.log"
cd /
"$CLUSTER" stop "$BASE/plain"
trap - EXIT
echo "recorded into $HERE" >&2
