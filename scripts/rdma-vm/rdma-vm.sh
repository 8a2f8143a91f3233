#!/usr/bin/env bash
# scripts/rdma-vm/rdma-vm.sh - run a command where real verbs work: a QEMU VM
# (TCG, no KVM needed) booting Debian's 6.1 kernel with Soft-RoCE (rdma_rxe).
#
# Usage:
#   rdma-vm.sh setup
#       Install what the VM needs (apt-get), unpack the kernel package that
#       linux-image-amd64 depends on into the cache (never installed on the
#       host: /boot stays untouched), run depmod, build the initramfs.
#       Idempotent: a second run only checks. Exit 3 when it cannot be done
#       on this machine (not root with packages missing, no package
#       registry, no such package); any other failure is a bug.
#   rdma-vm.sh run [-t SECONDS] [-w DIR]... [-e VAR]... [-m MB] [-s CPUS] [-k] -- CMD [ARG]...
#       Boot the VM, run CMD in the guest in the current directory, print its
#       stdout+stderr (after the VM exits: not streamed) and exit with CMD's
#       status. 124: CMD ran past -t inside the guest. 125: the VM gave no
#       result (the serial console's tail goes to stderr). 2: a usage error
#       or no setup, before any VM started.
#         -t SECONDS  CMD's time limit in the guest (default 300); the host
#                     kills QEMU at SECONDS + 120 as a backstop
#         -w DIR      share host DIR read-write at the same path (repeatable);
#                     every other write in the guest goes to a tmpfs and is lost
#         -e VAR      pass the host's environment variable VAR on (repeatable);
#                     ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS always are
#         -m MB       guest memory (default 2048)
#         -s CPUS     guest vCPUs (default: host cores, 2 to 4; with one vCPU,
#                     busy-polling starves rxe's softirq work)
#         -k          keep the job directory (console.log, setup.log) and say where
#   rdma-vm.sh help
#
# Environment: ORDO_RDMAVM_CACHE (default /var/cache/ordo-rdma-vm) holds the
# unpacked kernel (~415 MB), vmlinuz and initrd.img; ORDO_RDMAVM_KPKG names a
# kernel package instead of linux-image-amd64's dependency;
# ORDO_RDMAVM_BOOT_WAIT (default 120) is how long a boot may stay silent
# before the VM is booted again (twice at most).
#
# The guest. Its root is the host's / (virtio-9p, read-only, cache=loose)
# under a tmpfs overlay, so host-built programs and their libraries run
# unchanged at the same paths; build before `run` (with cache=loose the guest
# may miss files that change while it runs). It runs as root with
# `ulimit -l unlimited` and ORDO_RDMA_VM=1 in the environment. The VM has no
# NIC (-nic none): no packet leaves it.
#
# Facts about rxe in this VM that RDMA code and tests must respect:
#   * One device, rxe0, on a `dummy` netdev rxenet0 with 192.0.2.1/24
#     (TEST-NET-1); rxe loops a packet back when the destination is itself.
#     Port 1; GID [0] fe80::... and [1] ::ffff:192.0.2.1, both RoCE v2: use
#     GID index 1, and 192.0.2.1 for rdma_cm. Port MTU 1024.
#   * Only one rxe device works: on 6.1, rxe on `lo` fails (modify QP to RTR),
#     two rxe devices on a veth pair fail (the peer address is local), and an
#     rxe in another network namespace gets no GIDs. "Two hosts" are two
#     processes or two QPs on rxe0.
#   * Both sides of an rdma_cm connection must rdma_disconnect(): destroying
#     an id whose peer never answers the DREQ blocks ~70 s.
#   * Set QP timeouts and retry counts generously (timeout 14, retry 7,
#     rnr_retry 7): latency tails are several ms. Starting a process takes
#     0.5-2 s: a client must wait for its server, never sleep and hope.
#   * TCG numbers are never RDMA performance: rxe here is slower than TCP in
#     the same guest. This VM shows that a verbs code path is correct only.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${ORDO_RDMAVM_CACHE:-/var/cache/ordo-rdma-vm}
# Modules the initramfs loads to reach the host's root (their dependencies
# are added by modprobe --show-depends).
INITRD_MODULES="virtio_pci 9pnet_virtio 9p overlay"
# Host packages the VM needs. rdma-core ships the `rdma` tool's udev rules
# and the kernel-side config; iproute2 has `rdma link add`.
VM_PACKAGES=(qemu-system-x86 busybox-static kmod cpio gzip iproute2
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest)

log() { echo "rdma-vm: $*" >&2; }
# seconds a boot may take to show stage 1's first console line (cmd_run)
BOOT_WAIT=${ORDO_RDMAVM_BOOT_WAIT:-120}
die() {
	log "$*"
	exit 2
}
# The environment cannot provide the VM (exit 3): callers may skip.
unavailable() {
	log "cannot set up the VM here: $*"
	exit 3
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

# The kernel package linux-image-amd64 points at (linux-image-6.1.0-NN-amd64).
kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}

cmd_setup() {
	[ $# -eq 0 ] || die "setup takes no arguments (got: $*)"
	local missing=() p updated=0
	for p in "${VM_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		[ "$(id -u)" -eq 0 ] ||
			unavailable "packages ${missing[*]} are missing and installing them needs root"
		log "apt-get install ${missing[*]}"
		apt-get update -qq || unavailable "apt-get update failed (no package registry?)"
		updated=1
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null ||
			unavailable "apt-get install ${missing[*]} failed"
	fi
	mkdir -p "$CACHE" 2>/dev/null || unavailable "cannot create the cache $CACHE (set ORDO_RDMAVM_CACHE)"

	if [ ! -s "$CACHE/vmlinuz" ] || [ ! -s "$CACHE/kversion" ] ||
		[ ! -d "$CACHE/kernel/lib/modules/$(cat "$CACHE/kversion" 2>/dev/null)" ]; then
		[ -w "$CACHE" ] || unavailable "the cache $CACHE is not writable (set ORDO_RDMAVM_CACHE)"
		local kpkg=${ORDO_RDMAVM_KPKG:-}
		[ -n "$kpkg" ] || kpkg=$(kernel_package)
		if [ -z "$kpkg" ] && [ $updated -eq 0 ]; then
			[ "$(id -u)" -eq 0 ] || unavailable "apt does not know linux-image-amd64 and updating its lists needs root"
			apt-get update -qq || unavailable "apt-get update failed (no package registry?)"
			kpkg=$(kernel_package)
		fi
		[ -n "$kpkg" ] || unavailable "apt knows no package linux-image-amd64 depends on"
		log "downloading $kpkg (unpacked into $CACHE, not installed)"
		rm -rf "$CACHE/deb" "$CACHE/kernel" "$CACHE/vmlinuz" "$CACHE/kversion" "$CACHE/initrd.img"
		mkdir -p "$CACHE/deb" "$CACHE/kernel"
		# apt-get download as root warns that it runs unsandboxed (user _apt
		# cannot write here); harmless.
		(cd "$CACHE/deb" && apt-get download -q "$kpkg" 2>&1 |
			grep -v 'unsandboxed' >&2) || true
		ls "$CACHE"/deb/*.deb >/dev/null 2>&1 || unavailable "apt-get download $kpkg failed"
		dpkg-deb -x "$CACHE"/deb/*.deb "$CACHE/kernel"
		rm -rf "$CACHE/deb"
		local kv
		kv=$(ls "$CACHE/kernel/lib/modules")
		[ -n "$kv" ] && [ -f "$CACHE/kernel/boot/vmlinuz-$kv" ] ||
			die "$kpkg has no /lib/modules/VERSION and /boot/vmlinuz-VERSION"
		depmod -b "$CACHE/kernel" "$kv"
		cp "$CACHE/kernel/boot/vmlinuz-$kv" "$CACHE/vmlinuz"
		echo "$kv" >"$CACHE/kversion"
	fi
	if ! initrd_current; then
		[ -w "$CACHE" ] || unavailable "the cache $CACHE is not writable (set ORDO_RDMAVM_CACHE)"
		build_initrd
	fi
	log "ready: kernel $(cat "$CACHE/kversion"), cache $CACHE"
}

# The initramfs is up to date when it is newer than the scripts it holds.
initrd_current() {
	[ -s "$CACHE/initrd.img" ] &&
		[ ! "$HERE/guest-init.sh" -nt "$CACHE/initrd.img" ] &&
		[ ! "$HERE/guest-stage2.sh" -nt "$CACHE/initrd.img" ]
}

build_initrd() {
	local kv d m f b
	kv=$(cat "$CACHE/kversion")
	d=$(mktemp -d /tmp/ordo-rdma-vm-initrd.XXXXXX)
	mkdir -p "$d"/{bin,dev,proc,sys,mods,lower,upper,newroot,etc}
	cp /bin/busybox "$d/bin/busybox" # busybox-static: no libraries needed
	: >"$d/etc/modules.order"
	for m in $INITRD_MODULES; do
		while read -r f; do
			b=$(basename "$f")
			b=${b%%.ko*}
			grep -qx "$b" "$d/etc/modules.order" && continue
			case $f in
			*.ko.xz) xz -dc "$f" >"$d/mods/$b.ko" ;;
			*) cp "$f" "$d/mods/$b.ko" ;;
			esac
			echo "$b" >>"$d/etc/modules.order"
		done < <(modprobe -d "$CACHE/kernel" -S "$kv" --show-depends "$m" |
			awk '$1 == "insmod" { print $2 }')
	done
	cp "$HERE/guest-init.sh" "$d/init"
	chmod +x "$d/init"
	cp "$HERE/guest-stage2.sh" "$d/stage2.sh"
	(cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) >"$CACHE/initrd.img.tmp"
	mv "$CACHE/initrd.img.tmp" "$CACHE/initrd.img"
	rm -rf "$d"
	log "built $CACHE/initrd.img ($(du -h "$CACHE/initrd.img" | cut -f1))"
}

cmd_run() {
	local tmo=300 mem=2048 smp keep=0 rw=() envs=() o d v
	smp=$(nproc)
	((smp < 2)) && smp=2
	((smp > 4)) && smp=4
	OPTIND=1
	while getopts "t:w:e:m:s:kh" o; do
		case $o in
		t) tmo=$OPTARG ;;
		e)
			[[ $OPTARG =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "run -e $OPTARG: not a variable name"
			envs+=("$OPTARG")
			;;
		w)
			[ -d "$OPTARG" ] || die "run -w $OPTARG: no such directory"
			rw+=("$(realpath "$OPTARG")")
			;;
		m) mem=$OPTARG ;;
		s) smp=$OPTARG ;;
		k) keep=1 ;;
		h)
			usage
			exit 0
			;;
		*) die "run: unknown option (see '$0 help')" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ "${1:-}" = "--" ] && shift
	[ $# -gt 0 ] || die "run: no command given (usage: $0 run -t SECONDS -w DIR -- CMD...)"
	[[ $tmo =~ ^[1-9][0-9]*$ ]] || die "run -t $tmo: not a positive number of seconds"
	[ -s "$CACHE/initrd.img" ] && [ -s "$CACHE/vmlinuz" ] ||
		die "the VM is not set up in $CACHE: run '$0 setup' first"
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found: run '$0 setup'"
	initrd_current || build_initrd

	local job
	job=$(mktemp -d /tmp/ordo-rdma-vm-job.XXXXXX)
	{
		# The guest starts from a clean environment: pass the
		# sanitizers' options and the -e variables on.
		for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS "${envs[@]}"; do
			[ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
		done
		printf 'cd %q || exit 126\n' "$PWD"
		printf '%q ' "$@"
		echo
	} >"$job/cmd"
	{
		printf 'RDMAVM_JOB=%q\n' "$job"
		echo "RDMAVM_TIMEOUT=$tmo"
		echo "RDMAVM_KV=$(cat "$CACHE/kversion")"
		printf 'RDMAVM_MODDIR=%q\n' "$CACHE/kernel/lib/modules"
		local i=0
		for d in "${rw[@]}"; do
			printf 'RDMAVM_RW%d=%q\n' "$i" "$d"
			i=$((i + 1))
		done
		echo "RDMAVM_NRW=$i"
	} >"$job/env"

	local args=(-nodefaults -no-user-config -display none -no-reboot
		-machine q35 -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem"
		-kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img"
		-append "console=ttyS0 loglevel=4 panic=-1 rdmavm.job=$job"
		-chardev "file,id=con,path=$job/console.log" -serial chardev:con
		-monitor none -nic none
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
		-fsdev "local,id=job,path=$job,security_model=none,multidevs=remap"
		-device virtio-9p-pci,fsdev=job,mount_tag=job)
	local i=0
	for d in "${rw[@]}"; do
		args+=(-fsdev "local,id=rw$i,path=$d,security_model=none,multidevs=remap"
			-device "virtio-9p-pci,fsdev=rw$i,mount_tag=rw$i")
		i=$((i + 1))
	done

	# A boot under TCG now and then hangs before the kernel hands over to
	# init (seen once in ~20 boots on a 2-core host: an empty console for
	# 14 minutes, where stage 1 normally speaks within seconds). Stage 1's
	# first line on the console is the sign of life: without it in
	# BOOT_WAIT seconds the VM is killed and booted again, twice at most.
	# The deadline only ends a hang; a slow boot on a busy host stays far
	# below it.
	local t0=$SECONDS rc=0 attempt qpid start alive
	for attempt in 1 2 3; do
		timeout -k 10 $((tmo + 120)) qemu-system-x86_64 "${args[@]}" \
			</dev/null >"$job/qemu.log" 2>&1 &
		qpid=$!
		start=$SECONDS alive=0
		while kill -0 "$qpid" 2>/dev/null; do
			if grep -q "rdma-vm stage1" "$job/console.log" 2>/dev/null; then
				alive=1
				break
			fi
			[ $((SECONDS - start)) -lt "$BOOT_WAIT" ] || break
			sleep 0.2
		done
		if [ $alive = 1 ] || ! kill -0 "$qpid" 2>/dev/null || [ $attempt = 3 ]; then
			rc=0
			wait "$qpid" || rc=$?
			break
		fi
		log "the VM said nothing in $BOOT_WAIT s (a boot hung under TCG): booting again (attempt $((attempt + 1)) of 3)"
		kill "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
		rm -f "$job/rc" "$job/out"
	done
	[ -f "$job/out" ] && cat "$job/out"
	if [ -f "$job/rc" ]; then
		rc=$(cat "$job/rc")
		log "guest: exit $rc; VM $((SECONDS - t0)) s, rxe0 ready at $(cat "$job/boot_s" 2>/dev/null || echo '?') s"
	else
		log "no result from the VM (qemu exit $rc after $((SECONDS - t0)) s); console tail:"
		tail -n 40 "$job/console.log" >&2 2>/dev/null || true
		cat "$job/qemu.log" >&2 2>/dev/null || true
		[ -f "$job/setup.log" ] && { log "guest setup.log:"; cat "$job/setup.log" >&2; }
		rc=125
	fi
	if [ $keep -eq 1 ]; then log "job directory kept: $job"; else rm -rf "$job"; fi
	return "$rc"
}

case "${1:-}" in
setup)
	shift
	cmd_setup "$@"
	;;
run)
	shift
	cmd_run "$@"
	;;
help | -h | --help) usage ;;
"")
	usage >&2
	exit 2
	;;
*) die "unknown command '$1' (commands: setup, run, help)" ;;
esac
