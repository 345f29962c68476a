#!/bin/bash
# The init of the User-Mode Linux guest of tests/integration/uml.sh: mounts what a test needs,
# runs DIR/run.sh (snuml=DIR on the kernel's command line) with its output in DIR/out and its
# status in DIR/rc, and powers the guest off whatever happens.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin UML_GUEST=1 HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /dev/pts
mount -t tmpfs shm /dev/shm
mount -t devpts pts /dev/pts
mount -t tmpfs run /run
dir=$(sed -n 's/.*snuml=\([^ ]*\).*/\1/p' /proc/cmdline)
# a tmpfs on /tmp, unless the tree lies there (a clone in /tmp): it would hide DIR
case $dir in /tmp/*) ;; *) mount -t tmpfs tmp /tmp ;; esac
kv=$(uname -r)
if [ -d "/usr/lib/uml/modules/$kv" ]; then
	mount -t tmpfs mods /lib/modules
	mkdir "/lib/modules/$kv"
	mount --bind "/usr/lib/uml/modules/$kv" "/lib/modules/$kv"
fi
ip link set lo up
bash "$dir/run.sh" >"$dir/out" 2>&1
echo $? >"$dir/rc"
sync
halt -f -p
