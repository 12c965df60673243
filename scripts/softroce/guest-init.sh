#!/bin/busybox sh
# shellcheck shell=dash
# /init of the SoftRoCE guest's initramfs (busybox only). It loads the
# modules listed in /modules.load, mounts the host root read-only and the
# shares of this run over 9p, chroots into the host root and runs
# guest-job.sh there. Everything that belongs to one run (the command, its
# environment, the shares) is read from the `job` share, so this file and the
# initramfs built from it stay valid across runs and are cached.
/bin/busybox mkdir -p /proc /sys /dev /newroot /job /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Kernel messages stay in the console log, and only with tide.debug.
grep -q tide.debug /proc/cmdline || echo 0 >/proc/sys/kernel/printk

# Progress goes to the serial console, which the host keeps as a log: if the
# job share never comes up, the host reports the last step seen there.
step() { echo "tide-init: step $1" >/dev/ttyS0; }
die() {
  echo "tide-init: failed: $1" >/dev/ttyS0
  [ -w /job/status ] && echo "setup-failed $1" >>/job/status
  poweroff -f
}

step modules
while read -r ko args; do
  # shellcheck disable=SC2086  # module parameters are separate words
  insmod "/lib/modules/$ko" $args || die "insmod $ko"
done </modules.load

step mount-job
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /job || die "mount job share"
: >>/job/status || die "job share not writable"
read -r up _ </proc/uptime
echo "step init $up" >>/job/status
# shellcheck disable=SC1091  # written by softroce.sh for this run
. /job/config || die "read job config"

step mount-root
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /newroot ||
  die "mount host root"
for d in proc sys dev tmp run; do
  [ -d "/newroot/$d" ] || die "host root lacks /$d"
done
mount -t proc proc /newroot/proc || die "mount /proc"
mount -t sysfs sysfs /newroot/sys || die "mount /sys"
mount -t devtmpfs devtmpfs /newroot/dev || die "mount /dev"
mkdir -p /newroot/dev/pts /newroot/dev/shm
# What udev would add: bash process substitution needs /dev/fd.
ln -s /proc/self/fd /newroot/dev/fd
ln -s /proc/self/fd/0 /newroot/dev/stdin
ln -s /proc/self/fd/1 /newroot/dev/stdout
ln -s /proc/self/fd/2 /newroot/dev/stderr
mount -t devpts devpts /newroot/dev/pts || die "mount /dev/pts"
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm || die "mount /dev/shm"
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp || die "mount /tmp"
mount -t tmpfs -o mode=755 tmpfs /newroot/run || die "mount /run"
mkdir -p /newroot/run/tide-job
mount --move /job /newroot/run/tide-job || die "move job share"

# Read-write shares (the work tree first), each at the same path as on the
# host. A path missing from the read-only root can only be created where a
# fresh tmpfs lies above it (/tmp, /run).
i=0
while [ "$i" -lt "${TIDE_NSHARES:-0}" ]; do
  p=""
  eval "p=\$TIDE_SHARE_$i"
  step "mount-share-$i"
  mkdir -p "/newroot$p" 2>/dev/null
  [ -d "/newroot$p" ] || die "cannot create mount point $p"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=mmap "share$i" "/newroot$p" ||
    die "mount share $p"
  i=$((i + 1))
done

step job
# One open of the output port, inherited by everything the job starts: the
# port accepts only one opener at a time.
chroot /newroot /bin/bash /run/tide-job/guest-job.sh </dev/null >/dev/vport0p1 2>&1
step poweroff
poweroff -f
