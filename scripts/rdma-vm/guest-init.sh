#!/bin/busybox sh
# shellcheck shell=dash
# scripts/rdma-vm/guest-init.sh - stage 1 of the rdma-vm guest: PID 1 of the
# initramfs (busybox-static; rdma-vm.sh setup puts it there as /init).
#
# Loads the virtio/9p/overlay modules copied from the kernel package, mounts
# the host's / (9p tag `hostroot`, read-only, cache=loose) as the lower layer
# of an overlay whose upper layer is a tmpfs, and switch_roots into it,
# handing over to stage 2 (guest-stage2.sh, run by the host's bash).
# Any failure powers the VM off; the host then reports "no result" (125)
# with this console output.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() {
	echo "rdma-vm stage1 FAILED: $*" >/dev/console
	echo o >/proc/sysrq-trigger
	sleep 10 # the power-off is asynchronous: do not return to the kernel as PID 1
}
echo "rdma-vm stage1 at $(cut -d' ' -f1 /proc/uptime)s" >/dev/console
for m in $(cat /etc/modules.order); do
	insmod "/mods/$m.ko" || echo "rdma-vm stage1: insmod $m failed" >/dev/console
done
# The 9p devices appear asynchronously after 9pnet_virtio loads: poll for the
# tag (at most 10 s), there is no event to wait on in an initramfs.
i=0
while ! grep -q hostroot /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 200 ] && break
	sleep 0.05
done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /lower ||
	fail "cannot mount the host's / (9p tag hostroot)"
mount -t tmpfs -o mode=755 tmpfs /upper || fail "cannot mount the tmpfs upper layer"
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot ||
	fail "cannot mount the overlay"
cp /stage2.sh /newroot/.ordo-rdmavm-stage2.sh
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /.ordo-rdmavm-stage2.sh
fail "switch_root"
