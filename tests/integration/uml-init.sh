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
# The guest's kernel modules: Debian's user-mode-linux ships them in /usr/lib/uml/modules/KV.
# The guest's root is the host's /, whose module directory (if the host has one) belongs to
# another kernel and is hidden (uml.sh); nothing is created on the host. The guest gets a module
# root of its own in its /run (a tmpfs), and every modprobe reads it: the tests' (a modprobe
# first in PATH, and SPLITNIC_MODROOT for lab/netns.sh's netns_kmods) and the kernel's own
# (kernel.modprobe, for modules it asks for itself: a qdisc, an IPVS scheduler).
kv=$(uname -r)
modroot=/run/snuml-modules
mods=/usr/lib/uml/modules/$kv
{
	mkdir -p "$modroot/lib/modules" /run/snuml-bin
	if [ ! -d "$mods" ]; then
		echo "uml-init: no modules for this kernel ($kv) in $mods (Debian's user-mode-linux)"
	elif ! kmod=$(command -v modprobe); then
		echo "uml-init: modprobe is missing (Debian's kmod: make deps); modules in $mods"
	else
		ln -s "$mods" "$modroot/lib/modules/$kv"
		printf '#!/bin/sh\nexec %s -d %s "$@"\n' "$kmod" "$modroot" >/run/snuml-bin/modprobe
		chmod 755 /run/snuml-bin/modprobe
		echo /run/snuml-bin/modprobe >/proc/sys/kernel/modprobe
		export PATH=/run/snuml-bin:$PATH SPLITNIC_MODROOT=$modroot
	fi
} >"$dir/out" 2>&1
ip link set lo up
bash "$dir/run.sh" >>"$dir/out" 2>&1
echo $? >"$dir/rc"
sync
halt -f -p
