#!/usr/bin/env bash
# Starts and stops a real single-node Slurm cluster (munged + slurmctld + slurmd from Debian's
# slurm-wlm, optionally slurmdbd + MariaDB) whose every file lives under one directory, for the
# slurm executor's tests.
#
# Usage (as root; scripts/install-deps.sh installs the packages):
#   scripts/slurm-test-cluster.sh start [--accounting] DIR
#       writes DIR/slurm.conf, a munge key, state, spool and log dirs, starts the daemons on
#       127.0.0.1 and free ports, waits until the node is idle and prints `export NAME=value`
#       lines for the caller to eval. With --accounting it also runs MariaDB and slurmdbd under
#       DIR so that sacct works (a few seconds more; see docs/slurm-test-cluster.md).
#   scripts/slurm-test-cluster.sh stop DIR
#       cancels the jobs, stops what start started and kills any job step left behind;
#       idempotent, and a no-op for a DIR where nothing runs
#   scripts/slurm-test-cluster.sh status DIR
#       exits 0 when the cluster in DIR answers
#
# Typical use:  eval "$(scripts/slurm-test-cluster.sh start /tmp/slurm)"; sbatch ...
#               scripts/slurm-test-cluster.sh stop /tmp/slurm
#
# Nothing here uses systemd or the system's /etc/slurm, /etc/munge and /etc/mysql: the cluster
# has its own munge key and socket (named in slurm.conf's AuthInfo, so sbatch & co. find it
# through SLURM_CONF) and its own ports, so it runs beside a system munged/slurmd/mariadb (should
# a package's postinst have started one) or beside a second copy of itself.
#
# Only stdout carries the export lines; progress and errors go to stderr.
# Environment:
#   SLURM_TEST_START_TIMEOUT  seconds to wait for the node to become idle (default 60)
#   SLURM_TEST_MIN_JOB_AGE    seconds slurmctld keeps a finished job in memory, where squeue
#                             and scontrol still show it (default 300, Slurm's own default)
set -euo pipefail

# The node's name inside the cluster. A fixed name (not the machine's hostname) keeps the
# recorded outputs and the tests the same on every machine; slurmd is told it with -N, and it
# resolves to 127.0.0.1 everywhere.
NODE=localhost
PARTITION=debug
CLUSTER=cairntest
# Set in the environment of every daemon this script starts, and so inherited by every
# slurmstepd that slurmd forks: stop finds job steps whose daemons are gone by it. It is never
# exported to callers, so jobs' own processes and the test runner never carry it.
MARK=CAIRN_SLURM_TEST_CLUSTER

log() { echo "slurm-test-cluster: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  echo "usage: $0 start [--accounting] DIR | stop DIR | status DIR" >&2
  exit 2
}

ACCOUNTING=0
[ $# -ge 2 ] || usage
cmd=$1
shift
if [ "$cmd" = start ] && [ "$1" = --accounting ]; then
  ACCOUNTING=1
  shift
fi
[ $# -eq 1 ] || usage
if [ "$cmd" != start ] && [ ! -d "$1" ]; then
  [ "$cmd" = stop ] && exit 0 # nothing was ever started there
  exit 1
fi
mkdir -p "$1"
DIR=$(cd "$1" && pwd -P)
# Every daemon this script may start, in the order it starts them.
DAEMONS="munged mariadbd slurmdbd slurmctld slurmd"

# --- helpers ---------------------------------------------------------------------------------

# Prints a TCP port on 127.0.0.1 that nothing listens on and that is not in $1 (a
# space-separated list).
free_port() {
  local avoid=" ${1:-} " port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 40000))
    case "$avoid" in *" $port "*) continue ;; esac
    # A connect that succeeds means a listener is there; bash's /dev/tcp needs no extra tool.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
    if command -v ss >/dev/null && ss -Htan "( sport = :$port )" 2>/dev/null | grep -q .; then
      continue
    fi
    echo "$port"
    return 0
  done
  die "found no free TCP port"
}

# True when process $1 is alive and its environment carries our mark for DIR, so that a
# recycled pid is never taken for ours. A zombie's environ reads empty: it counts as gone.
pid_ours() {
  # environ is NUL-separated: -z reads it as lines, -x wants the whole entry.
  grep -qzx "$MARK=$DIR" "/proc/$1/environ" 2>/dev/null
}

# True once process $1 has exited: no longer in /proc, or a zombie its parent has not reaped
# yet. (Its environ may read empty a little earlier, while it is still exiting.)
pid_gone() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  case "${stat%% *}" in Z | X) return 0 ;; *) return 1 ;; esac
}

# True when pid file $1 names a process of ours that is alive.
ours_alive() {
  [ -s "$1" ] && pid_ours "$(cat "$1")"
}

# Every live process carrying our mark for DIR (daemons and the slurmstepds they forked). One
# grep over all of /proc, as a fork per process is slow (seconds under gVisor); unreadable or
# vanished entries are skipped (-s).
marked_pids() {
  grep -slzx "$MARK=$DIR" /proc/[0-9]*/environ 2>/dev/null |
    sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' || true
}

# Prints the given pids and those of all their descendants, from the parent pids in /proc.
with_descendants() {
  local -A kids=()
  local f line pid ppid
  local -a todo=("$@")
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    pid=${line%% *}
    # Fields after the command name, which is in parentheses and may hold spaces: state ppid ...
    line=${line##*) }
    line=${line#* }
    ppid=${line%% *}
    kids[$ppid]="${kids[$ppid]:-} $pid"
  done
  while [ ${#todo[@]} -gt 0 ]; do
    pid=${todo[0]}
    todo=("${todo[@]:1}")
    echo "$pid"
    # shellcheck disable=SC2206
    todo+=(${kids[$pid]:-})
  done
}

# Sends TERM to the processes of the given pid files (those still ours), waits up to 10 s for
# all of them, KILLs what is left, and removes the pid files.
stop_pidfiles() {
  local f pids="" p left=""
  for f in "$@"; do
    if ours_alive "$f"; then pids="$pids $(cat "$f")"; fi
  done
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 100); do
      left=""
      # Wait for a real exit: a munged still exiting would unlink the socket of the next one.
      for p in $pids; do if ! pid_gone "$p"; then left="$left $p"; fi; done
      [ -z "$left" ] && break
      sleep 0.1
    done
    if [ -n "$left" ]; then
      log "pids$left ignored TERM for 10 s; killing them"
      # shellcheck disable=SC2086
      kill -KILL $left 2>/dev/null || true
    fi
  fi
  rm -f "$@"
}

# Shows the end of every log. A daemon in the foreground copies its log file to stderr, so
# NAME.out is skipped when NAME.log has the same lines. The mpi/pmix errors in slurmd's and
# slurmctld's logs are harmless (Debian builds the plugin; libpmix is not installed).
tail_logs() {
  local f
  for f in "$DIR"/log/*; do
    [ -s "$f" ] || continue
    case "$f" in *.out) [ -s "${f%.out}.log" ] && continue ;; esac
    echo "----- last lines of $f -----" >&2
    tail -n 25 "$f" >&2
  done
}

# Fails, naming it, when a daemon that launch started has exited.
daemons_alive() {
  local d
  for d in $DAEMONS; do
    [ -e "$DIR/run/$d.pid" ] || continue
    ours_alive "$DIR/run/$d.pid" || {
      log "$d exited"
      return 1
    }
  done
}

# Polls "$@" until it succeeds. Fails after $1 seconds, or as soon as a daemon has exited.
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    daemons_alive || return 1
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}

node_idle() { [ "$(timeout 5 sinfo -h -n "$NODE" -o %T 2>/dev/null)" = idle ]; }
dbd_answers() { timeout 5 sacctmgr -n -P list cluster >/dev/null 2>&1; }

# Runs "$@" detached (own session, no terminal, output to log/NAME.out) with our mark set, and
# records its pid in run/NAME.pid. Every daemon runs in the foreground so that this pid is the
# daemon's own.
launch() {
  local name=$1 pid
  shift
  env "$MARK=$DIR" setsid "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
  pid=$!
  echo "$pid" >"$DIR/run/$name.pid"
  # Until env has exec'd the daemon, the process does not carry the mark yet, and a check in
  # between would take it for a daemon that exited: wait for one or the other (at most 2 s).
  for _ in $(seq 1 100); do
    pid_ours "$pid" && return 0
    pid_gone "$pid" && return 0
    sleep 0.02
  done
}

# --- stop ------------------------------------------------------------------------------------

do_stop() {
  local pids
  [ -d "$DIR/run" ] || return 0
  # Cancel the jobs first while slurmctld still answers, so slurmstepd ends their processes.
  if ours_alive "$DIR/run/slurmctld.pid" && [ -f "$DIR/slurm.conf" ]; then
    SLURM_CONF="$DIR/slurm.conf" timeout 10 scancel --partition="$PARTITION" >/dev/null 2>&1 || true
    local end=$((SECONDS + 10))
    while [ "$SECONDS" -lt "$end" ] &&
      [ -n "$(SLURM_CONF="$DIR/slurm.conf" timeout 5 squeue -h -t active -o %i 2>/dev/null)" ]; do
      sleep 0.2
    done
  fi
  # All at once: the order does not matter, since the next start throws away every bit of
  # state anyway (slurmctld's last job records for slurmdbd included).
  stop_pidfiles "$DIR/run/slurmd.pid" "$DIR/run/slurmctld.pid" "$DIR/run/slurmdbd.pid" \
    "$DIR/run/mariadbd.pid" "$DIR/run/munged.pid"
  # Job steps outlive slurmd by design: a slurmstepd still carrying our mark (there is one
  # when slurmd died before the jobs were cancelled) is left over, and so are the job's
  # processes under it, which do not carry the mark.
  pids=$(marked_pids)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2046,SC2086
    kill -KILL $(with_descendants $pids) 2>/dev/null || true
  fi
  rm -f "$DIR"/run/*.pid
}

# --- start -----------------------------------------------------------------------------------

write_slurm_conf() {
  local ctld_port=$1 slurmd_port=$2 dbd_port=$3 topo mem real_mem accounting

  # slurmd -C prints this machine's layout, e.g.
  #   NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105
  # We keep its CPU layout (a mismatch would drain the node) and declare 5% less memory than it
  # sees, since a node that reports less memory than slurm.conf claims is drained.
  topo=$(slurmd -C 2>/dev/null | head -n 1) || true
  [ -n "$topo" ] || die "slurmd -C printed nothing; is slurmd installed?"
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$topo")
  real_mem=$((mem * 95 / 100))
  topo=$(tr ' ' '\n' <<<"$topo" |
    grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')

  if [ "$ACCOUNTING" = 1 ]; then
    accounting="# Job records go to our slurmdbd (and its MariaDB), where sacct reads them.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$NODE
AccountingStoragePort=$dbd_port
# The munge socket for talking to slurmdbd; without it slurmctld, sacct and sacctmgr use
# the system's /run/munge socket even though AuthInfo names ours.
AccountingStoragePass=$DIR/munge/munge.socket.2"
  else
    accounting="# No slurmdbd: sacct answers 'Slurm accounting storage is disabled' (Slurm 20.11 dropped
# the text-file storage). Finished jobs stay visible to squeue and scontrol for MinJobAge s.
AccountingStorageType=accounting_storage/none"
  fi

  cat >"$DIR/slurm.conf" <<EOF
# Written by scripts/slurm-test-cluster.sh: a single-node test cluster. Every path is under
# $DIR and every daemon runs as root.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
# Listen on the address the node name resolves to (127.0.0.1), not on every interface.
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
MailProg=/bin/true

# Our own munge daemon: clients and daemons all reach it through this socket.
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
CredType=cred/munge

StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$DIR/run/slurmd.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# An empty plugin stack, so whatever /etc/slurm/plugstack.conf holds stays out of the tests.
PlugStackConfig=$DIR/plugstack.conf

# No cgroups: processes are tracked through /proc and tasks are not bound, so the cluster runs
# in containers and VMs without a writable cgroup tree.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Memory is a consumable resource, so --mem is checked against RealMemory. With no cgroup to
# enforce it, the accounting poller (every 2 s) kills a step whose processes grow past it.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, a job that gives no --mem is allotted the whole node's memory, and jobs
# then run one at a time.
DefMemPerCPU=2048
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=2
JobAcctGatherParams=OverMemoryKill
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none

$accounting
# Either way every finished job gets one line in the job completion log.
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
MinJobAge=${SLURM_TEST_MIN_JOB_AGE:-300}

# Quick turnarounds for tests: a cancelled or timed-out job gets KILL 2 s after TERM, a job is
# killed as soon as it passes its time limit, and a node that comes back is usable at once.
KillWait=2
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
SlurmdTimeout=60

# GPUs are a known resource type but this node has none (gres.conf is empty), so a job asking
# for --gres=gpu:N is refused by sbatch at submission.
GresTypes=gpu

NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE ${topo}RealMemory=$real_mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$DIR/plugstack.conf"
  # slurmd and slurmctld read gres.conf from beside slurm.conf; an empty one declares no GPU.
  : >"$DIR/gres.conf"
}

# Starts MariaDB (its own datadir, socket and port under DIR; root without password, reachable
# on 127.0.0.1 only) and slurmdbd on top of it. slurmctld adds the cluster to the database
# itself when it first registers.
start_accounting() {
  local db_port=$1 dbd_port=$2
  for b in mariadb-install-db mariadbd slurmdbd sacctmgr; do
    command -v "$b" >/dev/null || die "$b not found; run scripts/install-deps.sh"
  done
  mkdir -p "$DIR/mysql"
  # --no-defaults keeps /etc/mysql out.
  mariadb-install-db --no-defaults --datadir="$DIR/mysql/data" --user=root \
    --auth-root-authentication-method=normal --skip-test-db \
    >"$DIR/log/mariadb-install.out" 2>&1 || {
    tail_logs
    die "mariadb-install-db failed"
  }
  # A small buffer pool and no binary log keep it light.
  launch mariadbd mariadbd --no-defaults --user=root --datadir="$DIR/mysql/data" \
    --socket="$DIR/mysql/mysqld.sock" --port="$db_port" --bind-address=127.0.0.1 \
    --skip-name-resolve --pid-file="$DIR/mysql/mariadbd.pid" --log-error="$DIR/log/mariadbd.err" \
    --innodb-buffer-pool-size=64M --skip-log-bin

  # slurmdbd reads slurmdbd.conf from beside $SLURM_CONF, and only if SlurmUser alone can
  # read it.
  (
    umask 077
    cat >"$DIR/slurmdbd.conf" <<EOF
# Written by scripts/slurm-test-cluster.sh
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
DbdHost=$NODE
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$DIR/run/slurmdbd.daemon.pid
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
EOF
  )
  wait_until 30 test -S "$DIR/mysql/mysqld.sock" || {
    tail_logs
    die "mariadbd did not start within 30 s"
  }

  launch slurmdbd slurmdbd -D
  # slurmdbd creates its tables on its first start; wait until it answers, so slurmctld finds
  # it at once.
  wait_until 60 dbd_answers || {
    tail_logs
    die "slurmdbd did not answer within 60 s"
  }
}

do_start() {
  local t0 ms ctld_port slurmd_port db_port="" dbd_port="" state b
  t0=$(date +%s%3N)
  [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons and the munge key are root's)"
  for b in munged slurmctld slurmd sinfo squeue scancel sbatch; do
    command -v "$b" >/dev/null || die "$b not found; run scripts/install-deps.sh"
  done

  # Unix socket paths are limited to 107 bytes; the longest of ours is munge/munge.socket.2.
  [ ${#DIR} -le 86 ] || die "DIR is too long for the munge and MariaDB socket paths in it: $DIR"

  # A second start on the same DIR replaces the first cluster, and every start begins with
  # empty state (job ids begin at 1 again).
  do_stop
  # A start that fails stops whatever it had started.
  trap 'if [ $? -ne 0 ]; then do_stop; fi' EXIT
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/munge" "$DIR/run" "$DIR/mysql" \
    "$DIR/slurmdbd.conf"
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/munge" "$DIR/run"
  # munged refuses a socket directory that others can write to, and a key others can read.
  chmod 0755 "$DIR" "$DIR/munge"
  chmod 0700 "$DIR/state"

  ctld_port=$(free_port)
  slurmd_port=$(free_port "$ctld_port")
  if [ "$ACCOUNTING" = 1 ]; then
    db_port=$(free_port "$ctld_port $slurmd_port")
    dbd_port=$(free_port "$ctld_port $slurmd_port $db_port")
  fi
  write_slurm_conf "$ctld_port" "$slurmd_port" "$dbd_port"
  export SLURM_CONF="$DIR/slurm.conf"

  # munge: a fresh key, and a daemon of our own in the foreground (-F), which logs to stderr,
  # that is log/munged.out. --force lets it run as root.
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$DIR/munge/munge.key"
  launch munged munged -F --force \
    --socket="$DIR/munge/munge.socket.2" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed"
  wait_until 10 test -S "$DIR/munge/munge.socket.2" || {
    tail_logs
    die "munged did not create its socket"
  }

  if [ "$ACCOUNTING" = 1 ]; then start_accounting "$db_port" "$dbd_port"; fi

  # -D: stay in the foreground (launch detaches it); -i: ignore any state left from before.
  launch slurmctld slurmctld -D -i
  launch slurmd slurmd -D -N "$NODE"

  wait_until "${SLURM_TEST_START_TIMEOUT:-60}" node_idle || {
    state=$(timeout 5 sinfo -h -n "$NODE" -o %T 2>&1 || true)
    tail_logs
    die "node $NODE not idle after ${SLURM_TEST_START_TIMEOUT:-60} s (sinfo: '${state:-nothing}')"
  }
  ms=$(($(date +%s%3N) - t0))
  log "cluster up in $((ms / 1000)).$(printf %03d $((ms % 1000))) s (slurmctld :$ctld_port," \
    "slurmd :$slurmd_port${dbd_port:+, slurmdbd :$dbd_port, mariadbd :$db_port}; logs in $DIR/log)"
  trap - EXIT
  echo "export SLURM_CONF=$DIR/slurm.conf"
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status)
    ours_alive "$DIR/run/slurmctld.pid" && ours_alive "$DIR/run/slurmd.pid" &&
      SLURM_CONF="$DIR/slurm.conf" timeout 5 sinfo -h -n "$NODE" -o %T >/dev/null 2>&1
    ;;
  *) usage ;;
esac
