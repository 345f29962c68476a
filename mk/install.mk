# make install / make uninstall (deploy/install.sh does the work and keeps a manifest, so
# uninstall removes exactly what install wrote):
#
#   make install PREFIX=/usr/local DESTDIR=     binaries, libraries (.so with soname, .a),
#       headers, pkg-config files (splitnic, splitnic-client), man pages, the documentation
#       (share/doc/splitnic: README.md and docs/), the GPU executor where built
#       (lib/splitnic/libsncuda.so), the bundled models
#       and their labels (share/splitnic/models), examples, the lab's scripts
#       (share/splitnic/lab: namespaces, packet sweeps, IPVS, demos), the Wireshark dissector
#       (share/splitnic/wireshark), systemd units for splitnic-nic and splitnic-host, their
#       configuration files (SYSCONFDIR/splitnic/), and splitnic_client.py in Python's
#       dist-packages
#   make uninstall PREFIX=... DESTDIR=...

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR ?= $(PREFIX)/lib/systemd/system
PY_VERSION := $(shell /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# Debian's python3 reads /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VERSION)/dist-packages)
INSTALL_ENV = DESTDIR='$(DESTDIR)' PREFIX='$(PREFIX)' SYSCONFDIR='$(SYSCONFDIR)' \
	UNITDIR='$(UNITDIR)' PYTHONDIR='$(PYTHONDIR)' B='$(B)' VERSION=$(SN_VERSION) \
	SOVERSION=$(SN_SOVERSION)

install: $$(SPLITNIC) $$(SPLITNIC_NIC) $$(SPLITNIC_HOST) $$(SN_LIBS) $$(MODEL_FILES) $$(CUDA_SO_DEP)
	$(Q)$(INSTALL_ENV) deploy/install.sh install

uninstall:
	$(Q)$(INSTALL_ENV) deploy/install.sh uninstall

.PHONY: install uninstall
