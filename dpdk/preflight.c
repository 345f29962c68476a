// SPDX-License-Identifier: MIT
/* The DPDK servers' preflight (dpdk/preflight.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "dpdk/preflight.h"

#define PF_MAX_VDEVS 32
#define CAP_NET_RAW  13

/* What the EAL arguments ask for, as far as the checks need. */
struct pf_eal {
	const char *vdev[PF_MAX_VDEVS];
	unsigned n_vdev;
	const char *pci[PF_MAX_VDEVS];
	unsigned n_pci;
	const char *file_prefix;
	bool no_huge, no_pci, in_memory, shared; /* shared: --proc-type secondary or auto */
};

/* The --vdev names given (for dpdk_preflight_ports, after EAL). */
static char vdev_name[PF_MAX_VDEVS][RTE_ETH_NAME_MAX_LEN];
static unsigned n_vdev_name;

/* One line "WHO: ..." on stderr; returns status. */
static int pf_fail(const struct dpdk_server *s, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_vsay(s->who, fmt, ap);
	va_end(ap);
	return status;
}

/* argv[*i] is option `name` (an EAL long option "--name" or short "-x"): its value (from
 * "--name=V", "-xV" or the next argument, *i advanced), else NULL. */
static const char *pf_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=' && name[1] == '-')
		return a + n + 1;
	if (a[n] && name[1] != '-')
		return a + n;
	if (a[n] || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* The value of key (e.g. "iface") in a device's arguments "drv0,k=v,k=v" into out: true if
 * present. */
static bool pf_devarg(const char *dev, const char *key, char *out, size_t outlen)
{
	const size_t kl = strlen(key);

	for (const char *p = strchr(dev, ','); p; p = strchr(p + 1, ','))
		if (!strncmp(p + 1, key, kl) && p[1 + kl] == '=') {
			const char *v = p + 2 + kl, *e = strchr(v, ',');
			size_t n = e ? (size_t)(e - v) : strlen(v);

			snprintf(out, outlen, "%.*s", (int)n, v);
			return true;
		}
	return false;
}

static bool pf_is_server_opt(const struct dpdk_server *s, const char *arg)
{
	const struct conf_cmd *c = s->conf->cmd;
	size_t n;

	if (arg[0] != '-' || arg[1] != '-' || !arg[2])
		return false;
	arg += 2;
	n = strcspn(arg, "=");
	for (unsigned k = 0; k < c->n_opts; k++)
		if (strlen(c->opts[k].name) == n && !strncmp(c->opts[k].name, arg, n))
			return true;
	return false;
}

/* The EAL arguments into e; 2 after a message for a server option before "--"; -1 for EAL's
 * --help (nothing to check). */
static int pf_scan(const struct dpdk_server *s, int argc, char **argv, struct pf_eal *e)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return -1; /* EAL's own usage (--eal-help): nothing to check */
		if (pf_is_server_opt(s, a))
			return pf_fail(
			    s, 2,
			    "%.*s is %s's option, not EAL's: put it after -- (EAL-ARGS -- "
			    "OPTIONS)",
			    (int)strcspn(a, "="), a, s->conf->cmd->prog);
		if ((v = pf_value(argc, argv, &i, "--vdev"))) {
			if (e->n_vdev < PF_MAX_VDEVS)
				e->vdev[e->n_vdev++] = v;
		} else if ((v = pf_value(argc, argv, &i, "--allow")) ||
			   (v = pf_value(argc, argv, &i, "-a"))) {
			if (e->n_pci < PF_MAX_VDEVS)
				e->pci[e->n_pci++] = v;
		} else if ((v = pf_value(argc, argv, &i, "--file-prefix"))) {
			e->file_prefix = v;
		} else if ((v = pf_value(argc, argv, &i, "--proc-type"))) {
			e->shared = strcmp(v, "primary") != 0;
		} else if (!strcmp(a, "--no-huge")) {
			e->no_huge = true;
		} else if (!strcmp(a, "--no-pci")) {
			e->no_pci = true;
		} else if (!strcmp(a, "--in-memory")) {
			e->in_memory = true;
		}
	}
	return 0;
}

static bool pf_has_cap(unsigned cap)
{
	char line[256];
	bool has = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7)) {
			has = (strtoull(line + 7, NULL, 16) >> cap) & 1;
			break;
		}
	fclose(f);
	return has;
}

static bool pf_raw_socket_vdev(const char *dev)
{
	return !strncmp(dev, "net_af_packet", 13) || !strncmp(dev, "net_af_xdp", 10) ||
	       !strncmp(dev, "eth_af_packet", 13);
}

static int pf_privileges(const struct dpdk_server *s, const struct pf_eal *e)
{
	const char *why = NULL;

	if (geteuid() == 0 || pf_has_cap(CAP_NET_RAW))
		return 0;
	for (unsigned k = 0; k < e->n_vdev && !why; k++)
		if (pf_raw_socket_vdev(e->vdev[k]))
			why = e->vdev[k];
	if (!why && !e->no_pci && e->n_pci)
		why = e->pci[0];
	if (!why)
		return 0;
	return pf_fail(
	    s, 1, "not root: %.*s needs root (or CAP_NET_RAW and CAP_NET_ADMIN): run %s as root",
	    (int)strcspn(why, ","), why, s->conf->cmd->prog);
}

/* The number in file dir/name (sysfs), 0 where it cannot be read. */
static unsigned long pf_read_ulong(const char *dir, const char *name)
{
	char path[PATH_MAX];
	unsigned long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int pf_hugepages(const struct dpdk_server *s, const struct pf_eal *e)
{
	char line[512];
	unsigned long total = 0, free_pages = 0;
	bool mounted = false;
	glob_t g;
	FILE *f;

	if (e->no_huge)
		return 0;
	f = fopen("/proc/mounts", "r");
	while (f && fgets(line, sizeof(line), f))
		mounted |= strstr(line, " hugetlbfs ") != NULL;
	if (f)
		fclose(f);
	if (!glob("/sys/kernel/mm/hugepages/hugepages-*", 0, NULL, &g)) {
		for (size_t k = 0; k < g.gl_pathc; k++) {
			total += pf_read_ulong(g.gl_pathv[k], "nr_hugepages");
			free_pages += pf_read_ulong(g.gl_pathv[k], "free_hugepages");
		}
		globfree(&g);
	}
	if (!mounted)
		return pf_fail(s, 1,
			       "no hugetlbfs mounted: mount one (dpdk-hugepages.py --setup 1G) or "
			       "give EAL --no-huge -m 512");
	if (!free_pages)
		return pf_fail(s, 1,
			       "no free hugepages (%lu reserved, all in use): reserve some "
			       "(dpdk-hugepages.py --setup 1G) or give EAL --no-huge -m 512",
			       total);
	return 0;
}

/* One --vdev: 0, or 1 when what it names is not here. */
static int pf_vdev(const struct dpdk_server *s, const char *dev)
{
	char v[PATH_MAX], dir[PATH_MAX];
	const size_t n = strcspn(dev, ",");

	if (pf_raw_socket_vdev(dev) ||
	    (!strncmp(dev, "net_pcap", 8) && pf_devarg(dev, "iface", v, sizeof(v)))) {
		if (pf_devarg(dev, "iface", v, sizeof(v)) && !if_nametoindex(v))
			return pf_fail(s, 1,
				       "--vdev %.*s: no interface %s in this network namespace "
				       "(`ip link` lists them)",
				       (int)n, dev, v);
	}
	if (!strncmp(dev, "net_pcap", 8) && pf_devarg(dev, "rx_pcap", v, sizeof(v)) &&
	    access(v, R_OK))
		return pf_fail(s, 1, "--vdev %.*s: rx_pcap %s: %s", (int)n, dev, v,
			       strerror(errno));
	if (!strncmp(dev, "net_memif", 9) && pf_devarg(dev, "socket", v, sizeof(v)) &&
	    pf_devarg(dev, "socket-abstract", dir, sizeof(dir)) && !strcmp(dir, "no")) {
		char *slash = strrchr(v, '/');

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - v) : 1, slash ? v : ".");
		if (dir[0] && access(dir, W_OK))
			return pf_fail(s, 1, "--vdev %.*s: the folder %s of its socket: %s", (int)n,
				       dev, dir, strerror(errno));
	}
	if (n < sizeof(vdev_name[0]) && n_vdev_name < PF_MAX_VDEVS)
		snprintf(vdev_name[n_vdev_name++], sizeof(vdev_name[0]), "%.*s", (int)n, dev);
	return 0;
}

/* One -a/--allow PCI address: present, and bound to a driver DPDK can use. */
static int pf_pci(const struct dpdk_server *s, const char *arg)
{
	static const char *const ok[] = {"vfio-pci", "uio_pci_generic", "igb_uio", "mlx5_core",
					 "mlx4_core"};
	char addr[32], path[PATH_MAX], link[PATH_MAX];
	const size_t n = strcspn(arg, ",");
	const char *drv;
	ssize_t l;

	snprintf(addr, sizeof(addr), "%s%.*s", strchr(arg, ':') == strrchr(arg, ':') ? "0000:" : "",
		 (int)(n < 20 ? n : 20), arg);
	for (char *p = addr; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", addr);
	if (access(path, F_OK))
		return pf_fail(s, 1, "PCI device %s not found (`lspci -D` lists them)", addr);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", addr);
	l = readlink(path, link, sizeof(link) - 1);
	if (l < 0)
		return pf_fail(s, 1,
			       "PCI device %s is bound to no driver: bind it to vfio-pci "
			       "(dpdk-devbind.py --bind=vfio-pci %s)",
			       addr, addr);
	link[l] = 0;
	drv = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
		if (!strcmp(drv, ok[k]))
			return 0;
	return pf_fail(s, 1,
		       "PCI device %s is bound to %s, not to a driver DPDK can use: "
		       "dpdk-devbind.py --bind=vfio-pci %s",
		       addr, drv, addr);
}

/* The runtime folder of the prefix, held by another process (its config file locked)? */
static int pf_file_prefix(const struct dpdk_server *s, const struct pf_eal *e)
{
	const char *prefix = e->file_prefix ? e->file_prefix : "rte";
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char dir[PATH_MAX], path[PATH_MAX + 8];
	int fd;

	if (e->shared || e->in_memory)
		return 0;
	if (geteuid() == 0 || !xdg)
		snprintf(dir, sizeof(dir), "%s/%s", geteuid() == 0 ? "/var/run/dpdk" : "/tmp/dpdk",
			 prefix);
	else
		snprintf(dir, sizeof(dir), "%s/dpdk/%s", xdg, prefix);
	snprintf(path, sizeof(path), "%s/config", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &l) || l.l_type == F_UNLCK) {
		close(fd);
		return 0;
	}
	close(fd);
	return pf_fail(s, 1,
		       "--file-prefix %s: another DPDK process (pid %d) holds %s: give this one "
		       "another --file-prefix",
		       prefix, (int)l.l_pid, dir);
}

int dpdk_preflight_eal(const struct dpdk_server *s, int argc, char **argv)
{
	struct pf_eal e = {0};
	int ret = pf_scan(s, argc, argv, &e);

	if (ret < 0)
		return 0;
	n_vdev_name = 0;
	for (unsigned k = 0; !ret && k < e.n_vdev; k++)
		if (pf_raw_socket_vdev(e.vdev[k]) && !strstr(e.vdev[k], ",iface="))
			ret = pf_fail(s, 2, "--vdev %s: give its interface (%.*s,iface=IF)",
				      e.vdev[k], (int)strcspn(e.vdev[k], ","), e.vdev[k]);
	if (!ret)
		ret = pf_privileges(s, &e);
	if (!ret)
		ret = pf_hugepages(s, &e);
	for (unsigned k = 0; !ret && k < e.n_vdev; k++)
		ret = pf_vdev(s, e.vdev[k]);
	for (unsigned k = 0; !ret && !e.no_pci && k < e.n_pci; k++)
		ret = pf_pci(s, e.pci[k]);
	if (!ret)
		ret = pf_file_prefix(s, &e);
	return ret;
}

int dpdk_preflight_ports(const struct dpdk_server *s)
{
	uint16_t p;

	RTE_ETH_FOREACH_DEV(p)
	{
		struct rte_eth_dev_info info = {0};
		struct rte_ether_addr mac = {0};
		char name[RTE_ETH_NAME_MAX_LEN] = "?";

		rte_eth_dev_get_name_by_port(p, name);
		rte_eth_dev_info_get(p, &info);
		rte_eth_macaddr_get(p, &mac);
		printf("%s: Port %u: " RTE_ETHER_ADDR_PRT_FMT " (%s, driver %s, socket %d)\n",
		       s->who, p, RTE_ETHER_ADDR_BYTES(&mac), name,
		       info.driver_name ? info.driver_name : "?", rte_eth_dev_socket_id(p));
	}
	fflush(stdout);
	for (unsigned k = 0; k < n_vdev_name; k++) {
		if (!rte_eth_dev_get_port_by_name(vdev_name[k], &p))
			continue;
		return pf_fail(s, 1, "--vdev %s: EAL made no port of it (its lines above say why)",
			       vdev_name[k]);
	}
	return 0;
}
