# tests/tools/slurm_node.sh - a real single-node Slurm cluster for a test
# (sourced, bash). Slurm 22.05 (Debian 12 slurm-wlm) and munge, run as
# root, every daemon in a network namespace of the test's own, so the fixed
# ports (6817/6818) collide with nothing and nothing outlives slurm_down.
#
#   slurm_available    0 if this can work here (root, ip netns, binaries);
#                      else prints one line saying what is missing, returns 1
#   slurm_up DIR       namespace ordo-slurm-$$, munged, slurmctld, slurmd, all
#                      with their files in DIR (created if need be; at
#                      most 80 characters, no blanks); waits (bounded)
#                      until the node is idle; exports
#                      SLURM_CONF=DIR/slurm.conf; says on stderr how long
#                      it took. On failure: says why and prints the
#                      daemons' log tails on stderr, tears everything down
#                      again, returns 1 (2: bad usage).
#   slurm_run CMD...   runs CMD in the namespace, SLURM_CONF set, the
#                      caller's other SLURM_* variables removed; returns
#                      CMD's status (1 if no cluster is up):
#                      slurm_run srun -n 5 --overcommit prog
#                      Slurm clients run outside it (plain srun) reach no
#                      controller: the cluster's 127.0.0.1 is the
#                      namespace's own.
#   slurm_down         stops slurmd and slurmctld (TERM, KILL after 15 s),
#                      every process left in the namespace: job steps,
#                      srun (TERM, KILL after 2 s: srun and slurmstepd
#                      ignore TERM), then munged; waits for them all,
#                      deletes the namespace. About 0.2 s, 2.3 s with a
#                      step still running. Idempotent, returns 0, works
#                      under set -euo pipefail; fine in an EXIT trap:
#                        trap 'rc=$?; slurm_down; (exit $rc); on_exit' EXIT
#
# Call slurm_up/slurm_down in the test's own shell, not in a subshell or a
# pipeline: the state lives in shell variables, and the daemons are that
# shell's children (so a bare `wait` in the test would wait for them too:
# wait for your own pids). Job steps, which slurmd detaches, are found and
# killed through the namespace. If the shell dies without slurm_down
# (SIGKILL at a test timeout), the daemons get a parent-death KILL, and a
# detached watchdog (bash, "ordo-slurm-watchdog" on its command line, one
# per cluster) kills what is left in the namespace and deletes it within
# about 3 s. Every process here carries DIR on its command line except the
# watchdog and slurmstepd: a `pgrep -f "$WORK"` leftover check (lib.sh's
# assert_no_leftovers) sees the daemons while the cluster is up if DIR is
# under $WORK, so check after slurm_down, or keep DIR elsewhere.
#
# Set by slurm_up (read them, don't change them; not exported):
# SLURM_NODE_NS (the namespace; empty again after slurm_down),
# SLURM_NODE_DIR (kept after slurm_down, for the logs), SLURM_NODE_NAME
# (the node: ordo-node); and SLURM_CONF, exported (slurm_down restores
# what it was). Knobs, read by slurm_up: SLURM_NODE_CPUS (CPUs the node
# claims, default 8, however many cores the machine has),
# SLURM_NODE_TIMEOUT (seconds to wait for the node, default 60).
#
# Why some settings (Slurm 22.05):
#  - lo gets a second address (127.0.0.2): Slurm resolves every address,
#    127.0.0.1 and its own listen address included, with AI_ADDRCONFIG,
#    and glibc then finds no IPv4 at all where 127.0.0.1 is the only one:
#    "slurm_set_addr: Unable to resolve", slurmctld exits.
#  - cgroup.conf CgroupPlugin=cgroup/v1: slurmd 22.05 always initialises a
#    cgroup plugin, and the default (autodetect) fails where no cgroup fs is
#    mounted, which is the case under `ip netns exec` (it mounts a fresh
#    /sys). The v1 plugin's init touches nothing; with proctrack/pgid,
#    task/none and no accounting it is never used.
#  - munged --force: as root it refuses a socket directory that is not
#    executable by all (DIR is typically a 0700 mktemp dir).
#  - SlurmdParameters=config_overrides: the node claims SLURM_NODE_CPUS
#    CPUs whatever the hardware ("Node configuration differs from
#    hardware" in slurmd's log is expected).
#  - ProctrackType=proctrack/linuxproc, not pgid: pgid waits at the end of
#    a step or batch job until its process group is empty, and srun's
#    helper process becomes a zombie in that group, child of init: where
#    init is slow to reap (a container's), every batch job that runs srun
#    took 3 s more to end. No cgroups (see above).
#  - MinJobAge=0: finished jobs stay listed (scontrol show job works after
#    the end), and `sbatch --wait` keeps polling every 2 s; with the
#    default (300) it polls after 2, 8, 32... s: a 1 s job took 10 s.
#  - "mpi/pmix_v4 ... can not load PMIx library" errors in the logs are
#    harmless: 22.05 daemons load every MPI plugin; MpiDefault=none.

SLURM_NODE_NAME=ordo-node

# _slurm_node_say MSG: a message on stderr, prefixed.
_slurm_node_say() {
	echo "slurm_node: $*" >&2
}

# _slurm_node_env: the env(1) arguments that drop the caller's SLURM_*
# variables (a test run inside a real allocation would otherwise attach
# srun to that job) and set SLURM_CONF to ours. Into _slurm_node_envargs.
_slurm_node_envargs=()
_slurm_node_env() {
	local v
	_slurm_node_envargs=()
	for v in $(compgen -e); do
		case $v in SLURM_*) _slurm_node_envargs+=(-u "$v") ;; esac
	done
	_slurm_node_envargs+=("SLURM_CONF=$SLURM_NODE_DIR/slurm.conf")
}

# _slurm_node_alive PID: the process exists and is not a zombie (no fork:
# this runs in tight polling loops).
_slurm_node_alive() {
	local st
	[ -n "$1" ] || return 1
	{ read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# _slurm_node_wait_gone SECONDS PID...: 0 once none of the PIDs is alive,
# 1 if some still are after SECONDS.
_slurm_node_wait_gone() {
	local limit=$1 p left now end
	shift
	now=$EPOCHREALTIME
	end=$((${now//[.,]/} + limit * 1000000))
	while :; do
		left=
		for p in "$@"; do
			_slurm_node_alive "$p" && left=1 && break
		done
		[ -z "$left" ] && return 0
		now=$EPOCHREALTIME
		[ "${now//[.,]/}" -lt "$end" ] || return 1
		sleep 0.05
	done
}

# _slurm_node_stop SECONDS PID...: TERM, wait up to SECONDS, then KILL;
# reaps the ones that are our children.
_slurm_node_stop() {
	local limit=$1 p
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null
	if ! _slurm_node_wait_gone "$limit" "$@"; then
		local still=
		for p in "$@"; do
			_slurm_node_alive "$p" && still="$still $(cat "/proc/$p/comm" 2>/dev/null)($p)"
		done
		_slurm_node_say "still there ${limit}s after TERM, killing:$still"
		kill -KILL "$@" 2>/dev/null
		_slurm_node_wait_gone 10 "$@" || _slurm_node_say "pids $* still there after KILL"
	fi
	for p in "$@"; do
		_slurm_node_alive "$p" || wait "$p" 2>/dev/null
	done
	return 0
}

# _slurm_node_ns_pids NS: every process in the namespace, one a line.
_slurm_node_ns_pids() {
	[ -e "/run/netns/$1" ] || return 0
	ip netns pids "$1" 2>/dev/null
}

# _slurm_node_kill_ns NS: TERM, then KILL, every process in NS.
_slurm_node_kill_ns() {
	local pids
	pids=$(_slurm_node_ns_pids "$1")
	[ -z "$pids" ] && return 0
	# shellcheck disable=SC2086
	_slurm_node_stop 5 $pids
}

# _slurm_node_tails: the last lines of each daemon's log in SLURM_NODE_DIR
# (its log file; what it wrote to stdout/stderr where that is empty: what
# came before the log file was open, a fatal config error say).
_slurm_node_tails() {
	local d f
	for d in munged slurmctld slurmd; do
		f=$SLURM_NODE_DIR/$d.log
		[ -s "$f" ] || f=$SLURM_NODE_DIR/$d.out
		[ -s "$f" ] || continue
		echo "---- $f (last 30 lines)" >&2
		tail -n 30 "$f" >&2
	done
}

# _slurm_node_fail MSG: say it, show the logs, tear down, return 1.
_slurm_node_fail() {
	_slurm_node_say "slurm_up: $*"
	_slurm_node_tails
	slurm_down
	return 1
}

# _slurm_node_spawn NAME CMD...: CMD in the namespace, in the background,
# stdin /dev/null, stdout+stderr to DIR/NAME.out (never the test's own:
# a daemon holding the test's stdout open would hang whoever reads it).
# `ip netns exec` and setpriv exec in place, so $! is the daemon itself.
_slurm_node_spawn() {
	local name=$1
	shift
	_slurm_node_env
	setpriv --pdeathsig KILL ip netns exec "$SLURM_NODE_NS" \
		env "${_slurm_node_envargs[@]}" "$@" \
		</dev/null >"$SLURM_NODE_DIR/$name.out" 2>&1 &
	_slurm_node_pids+=("$!")
	_slurm_node_last=$!
}

# _slurm_node_client SECONDS CMD...: a client command in the namespace,
# bounded; its output on stdout.
_slurm_node_client() {
	local limit=$1
	shift
	_slurm_node_env
	timeout -k 2 "$limit" ip netns exec "$SLURM_NODE_NS" env "${_slurm_node_envargs[@]}" "$@" 2>&1
}

# The watchdog: a detached process (setsid, parent init, so a kill of the
# test's process tree does not reach it) that sleeps while the shell that
# called slurm_up lives (same pid, same start time) and the namespace
# exists. If that shell dies without slurm_down (SIGKILL by a test timeout,
# say), it kills everything in the namespace (the daemons already got their
# parent-death KILL; job steps had none) and deletes it. Its command line
# holds no path, so `pgrep -f "$WORK"` checks don't see it. It prints its
# pid first. Args: OWNER_PID OWNER_START NS.
# shellcheck disable=SC2016
_slurm_node_watchdog_script='
owner=$1 start=$2 ns=$3
echo $$
exec </dev/null >/dev/null 2>&1
trap "" INT TERM HUP QUIT PIPE
exec {t}<> <(:) # a pipe nobody writes to: read -t on it sleeps, no fork
owner_alive() {
	local st f
	{ read -r st <"/proc/$owner/stat"; } 2>/dev/null || return 1
	read -r -a f <<<"${st##*) }"
	[ "${f[0]}" != Z ] && [ "${f[19]}" = "$start" ]
}
while owner_alive && [ -e "/run/netns/$ns" ]; do
	read -r -t 1 -u "$t"
done
[ -e "/run/netns/$ns" ] || exit 0
pids=$(ip netns pids "$ns")
[ -n "$pids" ] && kill -TERM $pids
read -r -t 2 -u "$t"
pids=$(ip netns pids "$ns")
[ -n "$pids" ] && kill -KILL $pids
read -r -t 1 -u "$t"
ip netns del "$ns"
'

# _slurm_node_start_watchdog: starts it for SLURM_NODE_NS and this shell;
# its pid into _slurm_node_watchdog (empty if it did not start).
_slurm_node_start_watchdog() {
	local owner=$BASHPID st f i pidfile=$SLURM_NODE_DIR/watchdog.pid
	_slurm_node_watchdog=
	{ read -r st <"/proc/$owner/stat"; } 2>/dev/null || return 1
	read -r -a f <<<"${st##*) }"
	rm -f "$pidfile"
	setsid -f bash -c "$_slurm_node_watchdog_script" ordo-slurm-watchdog \
		"$owner" "${f[19]}" "$SLURM_NODE_NS" </dev/null >"$pidfile" 2>/dev/null || return 1
	for ((i = 0; i < 100; i++)); do
		read -r _slurm_node_watchdog <"$pidfile" 2>/dev/null && [ -n "$_slurm_node_watchdog" ] && return 0
		sleep 0.05
	done
	return 1
}

# _slurm_node_path: the daemons live in /usr/sbin, not on every PATH.
_slurm_node_path() {
	case :$PATH: in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac
}

# _slurm_node_usec: now, in microseconds (EPOCHREALTIME's separator is the
# locale's).
_slurm_node_usec() {
	local t=$EPOCHREALTIME
	echo "${t//[.,]/}"
}

slurm_available() {
	local -
	set +e +o pipefail
	local missing=() b p probe
	_slurm_node_path
	[ "$(id -u)" = 0 ] || missing+=("root (running as uid $(id -u))")
	for b in ip setpriv setsid timeout munged slurmctld slurmd slurmstepd srun sbatch squeue scontrol sinfo; do
		p=$(type -P "$b") && [ -f "$p" ] && [ -x "$p" ] || missing+=("$b")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		probe=ordo-slurm-probe-$$
		if ! ip netns add "$probe" >/dev/null 2>&1; then
			missing+=("a working 'ip netns add' (no CAP_SYS_ADMIN?)")
		else
			ip netns exec "$probe" true >/dev/null 2>&1 || missing+=("a working 'ip netns exec'")
			ip netns del "$probe" >/dev/null 2>&1
		fi
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		local line
		printf -v line '%s, ' "${missing[@]}"
		echo "slurm_available: missing: ${line%, }"
		return 1
	fi
	return 0
}

# _slurm_node_dir_ok DIR: usable in slurm.conf (else says why).
_slurm_node_dir_ok() {
	case $1 in *[[:space:]]* | *[\(\)=\#]*)
		_slurm_node_say "slurm_up: '$1': slurm.conf paths cannot hold blanks, parentheses, '=' or '#'"
		return 1
		;;
	esac
}

slurm_up() {
	local -
	set +e +o pipefail
	local dir=${1:-} cpus=${SLURM_NODE_CPUS:-8} limit=${SLURM_NODE_TIMEOUT:-60}
	local t0 deadline out st p
	t0=$(_slurm_node_usec)
	if [ -z "$dir" ] || [ $# -ne 1 ]; then
		_slurm_node_say "usage: slurm_up DIR"
		return 2
	fi
	if ! [[ $cpus =~ ^[1-9][0-9]{0,3}$ && $limit =~ ^[1-9][0-9]{0,4}$ ]]; then
		_slurm_node_say "slurm_up: SLURM_NODE_CPUS ($cpus) and SLURM_NODE_TIMEOUT ($limit) must be positive integers"
		return 2
	fi
	if [ -n "${SLURM_NODE_NS:-}" ]; then
		_slurm_node_say "slurm_up: already up (namespace $SLURM_NODE_NS); slurm_down first"
		return 1
	fi
	_slurm_node_path
	case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
	_slurm_node_dir_ok "$dir" || return 1
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd -P) || {
		_slurm_node_say "slurm_up: cannot create $dir"
		return 1
	}
	_slurm_node_dir_ok "$dir" || return 1
	# a unix socket path holds at most 107 bytes
	if [ ${#dir} -gt 80 ]; then
		_slurm_node_say "slurm_up: $dir is too long for munge's socket path (at most 80 characters)"
		return 1
	fi
	SLURM_NODE_DIR=$dir
	SLURM_NODE_NS=ordo-slurm-$$
	_slurm_node_pids=()
	_slurm_node_old_conf=${SLURM_CONF-__unset__}
	local m=$dir/munge conf=$dir/slurm.conf host
	host=$(uname -n)

	# the name holds our pid: one already there is a leftover of a dead
	# shell that had our pid, or of ours in a subshell; it goes
	if [ -e "/run/netns/$SLURM_NODE_NS" ]; then
		_slurm_node_say "slurm_up: removing a stale namespace $SLURM_NODE_NS"
		_slurm_node_kill_ns "$SLURM_NODE_NS"
		ip netns del "$SLURM_NODE_NS" 2>/dev/null
	fi
	ip netns add "$SLURM_NODE_NS" || {
		SLURM_NODE_NS=
		_slurm_node_fail "ip netns add failed"
		return 1
	}
	_slurm_node_start_watchdog || {
		_slurm_node_fail "cannot start the watchdog (setsid -f bash)"
		return 1
	}
	ip -n "$SLURM_NODE_NS" link set lo up &&
		ip -n "$SLURM_NODE_NS" addr add 127.0.0.2/8 dev lo || {
		_slurm_node_fail "cannot set up lo in $SLURM_NODE_NS"
		return 1
	}

	# munge: own key, socket, pid, seed; in the foreground (logs on stderr,
	# so to munged.out; --log-file is not used with -F)
	rm -rf "$m" && mkdir -m 0700 "$m" &&
		dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none &&
		chmod 0400 "$m/munge.key" || {
		_slurm_node_fail "cannot make the munge key in $m"
		return 1
	}
	_slurm_node_spawn munged munged --foreground --force --socket="$m/munge.socket" \
		--key-file="$m/munge.key" --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
		--seed-file="$m/munged.seed" --num-threads=2
	_slurm_node_munged=$_slurm_node_last

	mkdir -p "$dir/state" "$dir/spool" || {
		_slurm_node_fail "cannot make $dir/state, $dir/spool"
		return 1
	}
	: >"$dir/plugstack.conf"
	echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
	cat >"$conf" <<EOF
# written by tests/tools/slurm_node.sh
ClusterName=ordo
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$m/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
MinJobAge=0
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE_NAME NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1024 State=UNKNOWN
PartitionName=ordo Nodes=$SLURM_NODE_NAME Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF=$conf

	deadline=$((t0 + limit * 1000000))
	until [ -S "$m/munge.socket" ]; do
		_slurm_node_alive "$_slurm_node_munged" || {
			_slurm_node_fail "munged exited"
			return 1
		}
		[ "$(_slurm_node_usec)" -lt $deadline ] || {
			_slurm_node_fail "no munge socket after ${limit}s"
			return 1
		}
		sleep 0.05
	done

	_slurm_node_spawn slurmctld slurmctld -D -f "$conf"
	_slurm_node_slurmctld=$_slurm_node_last
	# slurmd registers once at start: it starts when slurmctld answers
	while :; do
		out=$(_slurm_node_client 5 scontrol ping)
		case $out in *"is UP"*) break ;; esac
		_slurm_node_alive "$_slurm_node_slurmctld" || {
			_slurm_node_fail "slurmctld exited"
			return 1
		}
		[ "$(_slurm_node_usec)" -lt $deadline ] || {
			_slurm_node_fail "slurmctld not up after ${limit}s: $out"
			return 1
		}
		sleep 0.1
	done

	_slurm_node_spawn slurmd slurmd -D -N "$SLURM_NODE_NAME" -f "$conf"
	_slurm_node_slurmd=$_slurm_node_last
	while :; do
		st=$(_slurm_node_client 5 sinfo -h -n "$SLURM_NODE_NAME" -o %t)
		[ "$st" = idle ] && break
		for p in "munged:$_slurm_node_munged" "slurmctld:$_slurm_node_slurmctld" "slurmd:$_slurm_node_slurmd"; do
			_slurm_node_alive "${p#*:}" || {
				_slurm_node_fail "${p%%:*} exited before the node was idle"
				return 1
			}
		done
		[ "$(_slurm_node_usec)" -lt $deadline ] || {
			_slurm_node_fail "node $SLURM_NODE_NAME not idle after ${limit}s (state: $st)"
			return 1
		}
		sleep 0.1
	done
	local us=$(($(_slurm_node_usec) - t0))
	_slurm_node_say "node $SLURM_NODE_NAME idle ($cpus CPUs, namespace $SLURM_NODE_NS) after $((us / 1000000)).$(printf %03d $((us / 1000 % 1000)))s"
	return 0
}

slurm_run() {
	local -
	set +e +o pipefail
	if [ -z "${SLURM_NODE_NS:-}" ]; then
		_slurm_node_say "slurm_run: no cluster (slurm_up first)"
		return 1
	fi
	if [ $# -eq 0 ]; then
		_slurm_node_say "usage: slurm_run CMD [ARGS...]"
		return 2
	fi
	_slurm_node_env
	ip netns exec "$SLURM_NODE_NS" env "${_slurm_node_envargs[@]}" "$@"
}

slurm_down() {
	local -
	set +e +o pipefail
	local ns=${SLURM_NODE_NS:-} daemons=() p
	[ -n "$ns" ] || return 0
	# slurmd and slurmctld first (slurmctld saves its state on TERM), then
	# whatever is left in the namespace (slurmstepd and the tasks of steps
	# still running: slurmd detaches them), munged last
	for p in "${_slurm_node_slurmd:-}" "${_slurm_node_slurmctld:-}"; do
		[ -n "$p" ] && daemons+=("$p")
	done
	_slurm_node_stop 15 "${daemons[@]}"
	local left
	left=$(_slurm_node_ns_pids "$ns" | grep -vx "${_slurm_node_munged:-0}")
	# shellcheck disable=SC2086
	[ -n "$left" ] && _slurm_node_stop 2 $left
	[ -n "${_slurm_node_munged:-}" ] && _slurm_node_stop 10 "$_slurm_node_munged"
	_slurm_node_kill_ns "$ns"
	for p in "${_slurm_node_pids[@]}"; do
		_slurm_node_alive "$p" || wait "$p" 2>/dev/null
	done
	if [ -e "/run/netns/$ns" ]; then
		ip netns del "$ns" 2>/dev/null || _slurm_node_say "slurm_down: cannot delete namespace $ns"
	fi
	# the watchdog has nothing left to do (it would see the namespace gone
	# within a second); not our child, so not reaped here
	if [ -n "${_slurm_node_watchdog:-}" ]; then
		kill -KILL "$_slurm_node_watchdog" 2>/dev/null
		_slurm_node_wait_gone 5 "$_slurm_node_watchdog"
		_slurm_node_watchdog=
	fi
	if [ "${_slurm_node_old_conf-__unset__}" = __unset__ ]; then
		unset SLURM_CONF
	else
		export SLURM_CONF=$_slurm_node_old_conf
	fi
	SLURM_NODE_NS=
	_slurm_node_pids=()
	_slurm_node_munged='' _slurm_node_slurmctld='' _slurm_node_slurmd=''
	return 0
}
