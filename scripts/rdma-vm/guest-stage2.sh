#!/bin/bash
# scripts/rdma-vm/guest-stage2.sh - stage 2 of the rdma-vm guest: PID 1 after
# switch_root, run by the host's bash from the read-only lower layer.
#
# Mounts the job share (`job`: cmd, env in; out, rc, setup.log, boot_s out)
# and the -w shares at their host paths, loads rdma_rxe from the unpacked
# kernel package in the host's cache, creates rxe0 on a dummy netdev with
# 192.0.2.1/24, runs the job under `timeout` (exit 124 past -t) and powers
# the VM off. The host reads `rc` only after `out` is complete: rc is
# written last, through a rename.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
con() { echo "rdma-vm stage2: $*" >/dev/console; }
off() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 30 2>/dev/null # PID 1 must not exit before the power-off
}
trap off EXIT
up() { cut -d' ' -f1 /proc/uptime; }

t_stage2=$(up)
job=$(sed -n 's/.*rdmavm\.job=\([^ ]*\).*/\1/p' /proc/cmdline)
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mkdir -p "$job"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 job "$job" || {
	con "cannot mount the job share $job"
	exit 1
}
. "$job/env"
for ((i = 0; i < RDMAVM_NRW; i++)); do
	v=RDMAVM_RW$i
	mkdir -p "${!v}" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "rw$i" "${!v}" ||
		con "cannot mount -w ${!v}"
done
hostname rdmavm 2>/dev/null
ulimit -l unlimited # verbs pin memory
t_mounted=$(up)

# The kernel's modules live in the host's cache (the package is unpacked
# there, not installed).
mkdir -p /lib/modules
ln -sfn "$RDMAVM_MODDIR/$RDMAVM_KV" "/lib/modules/$RDMAVM_KV"
t_mods="?"
rxe_setup() {
	ip link set lo up &&
		modprobe -a rdma_rxe ib_uverbs rdma_ucm ib_umad &&
		t_mods=$(up) &&
		# rxe0 on a dummy netdev: rxe loops packets for its own address
		# back internally. (rxe on lo, or two rxe on a veth pair, do not
		# work on 6.1.)
		modprobe dummy numdummies=0 &&
		ip link add rxenet0 type dummy &&
		ip addr add 192.0.2.1/24 dev rxenet0 &&
		ip link set rxenet0 up &&
		rdma link add rxe0 type rxe netdev rxenet0
}
rxe_setup >"$job/setup.log" 2>&1 || con "rxe setup failed: $(tail -n 3 "$job/setup.log")"
up >"$job/boot_s"
echo "uptime: stage2 $t_stage2, shares mounted $t_mounted, modules $t_mods, rxe0 ready $(cat "$job/boot_s")" \
	>>"$job/setup.log"
con "ready at $(cat "$job/boot_s")s, running the job"

export ORDO_RDMA_VM=1
timeout -k 5 "$RDMAVM_TIMEOUT" bash "$job/cmd" >"$job/out" 2>&1 </dev/null
echo $? >"$job/rc.tmp"
sync
mv "$job/rc.tmp" "$job/rc"
con "job exit $(cat "$job/rc") at $(up)s"
