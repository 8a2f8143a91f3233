/*
 * transport/rdma_device.c - device, port and GID selection for the verbs
 * transport (rules in rdma_device.h).
 *
 * DESIGN. Every call first takes an inventory: it opens every device
 * libibverbs lists, queries each port (ibv_query_port) and reads each
 * device's valid GID entries in one call (ibv_query_gid_table: index, GID,
 * type, netdev ifindex; empty entries are left out). The choice is made on
 * the inventory, and an error message is written from it, so what the
 * message lists is exactly what the choice saw. Then every context except
 * the chosen one is closed. Nothing is cached between calls.
 *
 * A GID "carries" an IPv4 address when it is the IPv4-mapped IPv6 address
 * ::ffff:a.b.c.d, which is how the kernel fills RoCE GID tables from the
 * netdev's addresses. Only a RoCE v2 GID is taken automatically: RoCE v1
 * has the same GIDs but is not routable, and rdma_cm prefers v2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma_device.h"

#include "common/strbuf.h"

typedef struct port_info {
	int query_err; /* errno of ibv_query_port, 0 when attr is valid */
	struct ibv_port_attr attr;
} port_info;

typedef struct dev_info {
	char name[IBV_SYSFS_NAME_MAX];
	struct ibv_context *ctx; /* NULL when it could not be opened */
	int open_err;            /* errno of ibv_open_device/query_device */
	int nports;
	port_info *ports; /* ports[p - 1] is port p */
	struct ibv_gid_entry *gids;
	int ngids;
	int gid_err; /* errno of ibv_query_gid_table */
} dev_info;

typedef struct inventory {
	dev_info *devs;
	int ndevs;
	int list_err; /* errno of ibv_get_device_list, 0 when it answered */
} inventory;

const char *ps_rdma_gid_type_str(enum ibv_gid_type type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

const char *ps_rdma_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	default:
		return "unspecified";
	}
}

const char *ps_rdma_port_state_str(enum ibv_port_state st)
{
	switch (st) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "unknown";
}

static int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

/* The IPv4 address a GID carries (::ffff:a.b.c.d), or false. */
static bool gid_ipv4(const union ibv_gid *gid, struct in_addr *a)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
	                                   0, 0, 0, 0, 0xff, 0xff};
	if (memcmp(gid->raw, prefix, sizeof(prefix)) != 0)
		return false;
	memcpy(&a->s_addr, gid->raw + 12, 4);
	return true;
}

static bool gid_carries(const struct ibv_gid_entry *e,
                        const struct in_addr *addr)
{
	struct in_addr a;
	return addr && gid_ipv4(&e->gid, &a) && a.s_addr == addr->s_addr;
}

static const port_info *port_of(const dev_info *d,
                                const struct ibv_gid_entry *e)
{
	if (e->port_num < 1 || (int)e->port_num > d->nports ||
	    d->ports[e->port_num - 1].query_err)
		return NULL;
	return &d->ports[e->port_num - 1];
}

static bool port_active(const port_info *p)
{
	return p && p->attr.state == IBV_PORT_ACTIVE;
}

static void inventory_free(inventory *inv, const struct ibv_context *keep)
{
	for (int i = 0; i < inv->ndevs; i++) {
		dev_info *d = &inv->devs[i];
		if (d->ctx && d->ctx != keep)
			ibv_close_device(d->ctx);
		free(d->ports);
		free(d->gids);
	}
	free(inv->devs);
	memset(inv, 0, sizeof(*inv));
}

/* Ports and GIDs of one opened device; failures are recorded, not fatal,
 * so the listing can show them. Returns PS_ENOMEM or PS_OK. */
static int inventory_device(dev_info *d)
{
	struct ibv_device_attr da;
	int rc = ibv_query_device(d->ctx, &da);
	if (rc) {
		d->open_err = rc;
		return PS_OK;
	}
	d->nports = da.phys_port_cnt;
	d->ports =
	    calloc(d->nports > 0 ? (size_t)d->nports : 1, sizeof(*d->ports));
	if (!d->ports)
		return PS_ENOMEM;
	size_t slots = 0;
	for (int p = 1; p <= d->nports; p++) {
		port_info *pi = &d->ports[p - 1];
		pi->query_err = ibv_query_port(d->ctx, (uint8_t)p, &pi->attr);
		if (!pi->query_err && pi->attr.gid_tbl_len > 0)
			slots += (size_t)pi->attr.gid_tbl_len;
	}
	if (slots == 0)
		return PS_OK;
	d->gids = calloc(slots, sizeof(*d->gids));
	if (!d->gids)
		return PS_ENOMEM;
	ssize_t n = ibv_query_gid_table(d->ctx, d->gids, slots, 0);
	if (n < 0)
		d->gid_err = (int)-n;
	else
		d->ngids = (int)n;
	return PS_OK;
}

static int inventory_read(inventory *inv)
{
	memset(inv, 0, sizeof(*inv));
	int n = 0;
	errno = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		inv->list_err = errno ? errno : ENODEV;
		return PS_OK;
	}
	if (n > 0) {
		inv->devs = calloc((size_t)n, sizeof(*inv->devs));
		if (!inv->devs) {
			ibv_free_device_list(list);
			return PS_ENOMEM;
		}
	}
	int rc = PS_OK;
	for (int i = 0; i < n && rc == PS_OK; i++) {
		dev_info *d = &inv->devs[i];
		inv->ndevs = i + 1;
		snprintf(d->name, sizeof(d->name), "%s",
		         ibv_get_device_name(list[i]));
		errno = 0;
		d->ctx = ibv_open_device(list[i]);
		if (!d->ctx) {
			d->open_err = errno ? errno : EIO;
			continue;
		}
		rc = inventory_device(d);
	}
	/* Open contexts stay valid after the list is freed. */
	ibv_free_device_list(list);
	return rc;
}

/* The listing of ps_rdma_device_list() and of every error. */
static void inventory_print(const inventory *inv, const struct in_addr *addr,
                            ps_strbuf *sb)
{
	if (inv->list_err == ENOSYS) {
		ps_strbuf_addf(sb, "RDMA devices found: none (no RDMA support in "
		              "this kernel)\n");
		return;
	}
	if (inv->list_err) {
		ps_strbuf_addf(sb,
		          "RDMA devices found: none (libibverbs cannot list "
		          "devices: %s)\n",
		          strerror(inv->list_err));
		return;
	}
	if (inv->ndevs == 0) {
		ps_strbuf_addf(sb, "RDMA devices found: none\n");
		return;
	}
	ps_strbuf_addf(sb, "RDMA devices found: %d\n", inv->ndevs);
	for (int i = 0; i < inv->ndevs; i++) {
		const dev_info *d = &inv->devs[i];
		if (!d->ctx || d->open_err) {
			ps_strbuf_addf(sb, "  %s: cannot open it: %s\n", d->name,
			          strerror(d->open_err));
			continue;
		}
		if (d->nports == 0)
			ps_strbuf_addf(sb, "  %s: no ports\n", d->name);
		if (d->gid_err)
			ps_strbuf_addf(sb, "  %s: cannot read its GID table: %s\n",
			          d->name, strerror(d->gid_err));
		for (int p = 1; p <= d->nports; p++) {
			const port_info *pi = &d->ports[p - 1];
			if (pi->query_err) {
				ps_strbuf_addf(sb,
				          "  %s port %d: cannot query: %s\n",
				          d->name, p, strerror(pi->query_err));
				continue;
			}
			ps_strbuf_addf(sb,
			          "  %s port %d: state %s, link layer %s, "
			          "active MTU %d\n",
			          d->name, p,
			          ps_rdma_port_state_str(pi->attr.state),
			          link_layer_str(pi->attr.link_layer),
			          mtu_bytes(pi->attr.active_mtu));
			int shown = 0;
			for (int g = 0; g < d->ngids; g++) {
				const struct ibv_gid_entry *e = &d->gids[g];
				if ((int)e->port_num != p)
					continue;
				if (shown++ == 0)
					ps_strbuf_addf(
					    sb, "    %-5s  %-39s  %-7s  %s\n",
					    "index", "GID", "type", "netdev");
				char gs[INET6_ADDRSTRLEN], nd[IF_NAMESIZE];
				if (!e->ndev_ifindex ||
				    !if_indextoname(e->ndev_ifindex, nd))
					snprintf(nd, sizeof(nd), "-");
				struct in_addr a;
				char as[INET_ADDRSTRLEN] = "";
				if (gid_ipv4(&e->gid, &a))
					inet_ntop(AF_INET, &a, as, sizeof(as));
				ps_strbuf_addf(
				    sb, "    %-5u  %-39s  %-7s  %-*s%s%s%s\n",
				    e->gid_index,
				    ps_rdma_gid_str(&e->gid, gs, sizeof(gs)),
				    ps_rdma_gid_type_str(e->gid_type),
				    as[0] ? 8 : 0, nd, as[0] ? "  IPv4 " : "",
				    as,
				    gid_carries(e, addr) ? " (this node)" : "");
			}
			if (shown == 0)
				ps_strbuf_addf(sb, "    (no valid GID)\n");
		}
	}
}

/* What the reader should set: the keys, with values from this machine. */
static void hints_print(const inventory *inv, ps_strbuf *sb)
{
	ps_strbuf_addf(sb,
	          "To choose, set in the config's [transport] section (or "
	          "with --set):\n"
	          "  transport.rdma_device = NAME      a device above; empty "
	          "= automatic\n"
	          "  transport.rdma_gid_index = INDEX  a GID index above; -1 "
	          "= automatic: the RoCE v2 GID ::ffff:ADDR\n"
	          "where ADDR, the node's address, is cluster.advertise_host "
	          "(else cluster.bind_host).\n");
	if (inv->ndevs == 0)
		return;
	int n = 0;
	for (int i = 0; i < inv->ndevs; i++) {
		const dev_info *d = &inv->devs[i];
		for (int g = 0; g < d->ngids; g++) {
			const struct ibv_gid_entry *e = &d->gids[g];
			struct in_addr a;
			char as[INET_ADDRSTRLEN];
			if (e->gid_type != IBV_GID_TYPE_ROCE_V2 ||
			    !gid_ipv4(&e->gid, &a) ||
			    !port_active(port_of(d, e)))
				continue;
			if (n++ == 0)
				ps_strbuf_addf(sb, "Automatic selection works here "
				              "for these node addresses:\n");
			inet_ntop(AF_INET, &a, as, sizeof(as));
			ps_strbuf_addf(sb, "  %s (%s port %u, GID index %u)\n", as,
			          d->name, e->port_num, e->gid_index);
		}
	}
	if (n == 0)
		ps_strbuf_addf(sb, "No ACTIVE port here has a RoCE v2 GID with an "
		              "IPv4 address: give the RDMA netdev an IPv4 "
		              "address (ip addr add A/N dev NETDEV), check "
		              "the link, or set both keys explicitly.\n");
}

int ps_rdma_device_list(char *buf, size_t len)
{
	ps_strbuf sb = ps_strbuf_over(buf, len);
	if (len)
		buf[0] = '\0';
	inventory inv;
	if (inventory_read(&inv) != PS_OK) {
		ps_strbuf_addf(&sb, "out of memory while listing RDMA devices\n");
		inventory_free(&inv, NULL);
		return -1;
	}
	inventory_print(&inv, NULL, &sb);
	int n = inv.list_err ? -1 : inv.ndevs;
	inventory_free(&inv, NULL);
	return n;
}

void ps_rdma_device_close(ps_rdma_device *dev)
{
	if (!dev)
		return;
	if (dev->ctx)
		ibv_close_device(dev->ctx);
	memset(dev, 0, sizeof(*dev));
}

/* The choice: a device of the inventory and one of its GID entries. */
typedef struct choice {
	const dev_info *dev;
	const struct ibv_gid_entry *gid;
} choice;

/*
 * Chooses on the inventory. Returns true with *c set, or false with the
 * headline (why nothing fits) written into sb.
 */
static bool choose(const inventory *inv, const char *want_dev, int want_gid,
                   const struct in_addr *addr, const char *addr_str, choice *c,
                   ps_strbuf *sb)
{
	if (inv->list_err || inv->ndevs == 0) {
		if (inv->list_err == ENOSYS)
			ps_strbuf_addf(sb, "no RDMA device was found: this kernel "
			              "has no RDMA support loaded "
			              "(/sys/class/infiniband_verbs is "
			              "missing; ");
		else if (inv->list_err)
			ps_strbuf_addf(sb,
			          "no RDMA device was found: libibverbs "
			          "cannot list devices (%s; ",
			          strerror(inv->list_err));
		else
			ps_strbuf_addf(sb, "no RDMA device was found: libibverbs "
			              "lists none (");
		ps_strbuf_addf(sb, "is an RDMA NIC there, with its driver and "
		              "ib_uverbs loaded? For Soft-RoCE: modprobe "
		              "rdma_rxe; rdma link add rxe0 type rxe netdev "
		              "NETDEV).\n");
		return false;
	}
	const dev_info *named = NULL;
	if (want_dev) {
		for (int i = 0; i < inv->ndevs; i++)
			if (strcmp(inv->devs[i].name, want_dev) == 0)
				named = &inv->devs[i];
		if (!named) {
			ps_strbuf_addf(sb,
			          "no RDMA device is named \"%s\" "
			          "(transport.rdma_device).\n",
			          want_dev);
			return false;
		}
		if (!named->ctx || named->open_err) {
			ps_strbuf_addf(sb, "RDMA device %s cannot be opened: %s.\n",
			          named->name, strerror(named->open_err));
			return false;
		}
	}
	choice inactive = {NULL, NULL}, other_type = {NULL, NULL};
	choice first = {NULL, NULL};
	for (int i = 0; i < inv->ndevs; i++) {
		const dev_info *d = &inv->devs[i];
		if ((named && d != named) || !d->ctx || d->open_err)
			continue;
		for (int g = 0; g < d->ngids; g++) {
			const struct ibv_gid_entry *e = &d->gids[g];
			bool active = port_active(port_of(d, e));
			if (want_gid >= 0) {
				if ((int)e->gid_index != want_gid)
					continue;
				if (!active) {
					if (!inactive.dev)
						inactive = (choice){d, e};
					continue;
				}
				if (gid_carries(e, addr) || !addr) {
					*c = (choice){d, e};
					return true;
				}
				if (!first.dev)
					first = (choice){d, e};
				continue;
			}
			if (!gid_carries(e, addr))
				continue;
			if (e->gid_type != IBV_GID_TYPE_ROCE_V2) {
				if (!other_type.dev)
					other_type = (choice){d, e};
			} else if (!active) {
				if (!inactive.dev)
					inactive = (choice){d, e};
			} else {
				*c = (choice){d, e};
				return true;
			}
		}
	}
	if (first.dev) { /* explicit index, no entry carries the address */
		*c = first;
		return true;
	}
	const char *where = named ? named->name : "any device";
	if (want_gid >= 0 && named)
		ps_strbuf_addf(sb,
		          "RDMA device %s has no valid GID at index %d on an "
		          "ACTIVE port (transport.rdma_gid_index = %d).\n",
		          named->name, want_gid, want_gid);
	else if (want_gid >= 0)
		ps_strbuf_addf(sb,
		          "no RDMA device has a valid GID at index %d on an "
		          "ACTIVE port (transport.rdma_gid_index = %d).\n",
		          want_gid, want_gid);
	else
		ps_strbuf_addf(sb,
		          "no RoCE v2 GID carries the node's address %s "
		          "(GID ::ffff:%s) on an ACTIVE port of %s.\n",
		          addr_str, addr_str, where);
	if (inactive.dev) {
		const port_info *pi = port_of(inactive.dev, inactive.gid);
		ps_strbuf_addf(sb,
		          "The GID at index %u of %s port %u would fit, but "
		          "that port is %s.\n",
		          inactive.gid->gid_index, inactive.dev->name,
		          inactive.gid->port_num,
		          pi ? ps_rdma_port_state_str(pi->attr.state)
		             : "unknown");
	}
	if (other_type.dev)
		ps_strbuf_addf(sb,
		          "%s port %u carries %s at GID index %u, but as %s; "
		          "to use it anyway set transport.rdma_gid_index = "
		          "%u.\n",
		          other_type.dev->name, other_type.gid->port_num,
		          addr_str, other_type.gid->gid_index,
		          ps_rdma_gid_type_str(other_type.gid->gid_type),
		          other_type.gid->gid_index);
	return false;
}

int ps_rdma_device_open(const ps_rdma_device_opts *opts, ps_rdma_device *dev_p,
                        char *why, size_t whylen)
{
	ps_strbuf sb = ps_strbuf_over(why, whylen);
	if (whylen)
		why[0] = '\0';
	const char *want_dev =
	    opts->device && opts->device[0] ? opts->device : NULL;
	const char *addr_str = opts->addr && opts->addr[0] ? opts->addr : NULL;
	struct in_addr addr;
	int rc = PS_ENOENT;

	if (opts->gid_index < -1) {
		ps_strbuf_addf(&sb,
		          "transport.rdma_gid_index = %d: must be a GID index "
		          "(0 or more) or -1 (automatic).\n",
		          opts->gid_index);
		rc = PS_EINVAL;
	} else if (addr_str && inet_pton(AF_INET, addr_str, &addr) != 1) {
		ps_strbuf_addf(&sb,
		          "the node's address \"%s\" is not an IPv4 address "
		          "(a.b.c.d): the RDMA transport needs one to find its "
		          "RoCE v2 GID.\n",
		          addr_str);
		rc = PS_EINVAL;
	} else if (!addr_str && opts->gid_index < 0) {
		ps_strbuf_addf(&sb, "the node has no IPv4 address: automatic GID "
		               "selection needs one.\n");
		rc = PS_EINVAL;
	}

	inventory inv;
	if (inventory_read(&inv) != PS_OK) {
		inventory_free(&inv, NULL);
		snprintf(why, whylen,
		         "out of memory while listing RDMA "
		         "devices");
		return PS_ENOMEM;
	}
	choice c;
	if (rc == PS_ENOENT &&
	    choose(&inv, want_dev, opts->gid_index, addr_str ? &addr : NULL,
	           addr_str, &c, &sb)) {
		const port_info *pi = port_of(c.dev, c.gid);
		ps_rdma_device d = {0};
		d.ctx = c.dev->ctx;
		snprintf(d.name, sizeof(d.name), "%s", c.dev->name);
		d.port = (uint8_t)c.gid->port_num;
		d.gid_index = (int)c.gid->gid_index;
		d.gid = c.gid->gid;
		d.gid_type = (enum ibv_gid_type)c.gid->gid_type;
		if (!c.gid->ndev_ifindex ||
		    !if_indextoname(c.gid->ndev_ifindex, d.netdev))
			d.netdev[0] = '\0';
		d.active_mtu = pi->attr.active_mtu;
		d.port_state = pi->attr.state;
		d.link_layer = pi->attr.link_layer;
		inventory_free(&inv, d.ctx);
		*dev_p = d;
		return PS_OK;
	}
	ps_strbuf_addf(&sb,
	          "Asked for: transport.rdma_device = \"%s\"%s, "
	          "transport.rdma_gid_index = %d%s, node address %s.\n",
	          want_dev ? want_dev : "", want_dev ? "" : " (automatic)",
	          opts->gid_index, opts->gid_index < 0 ? " (automatic)" : "",
	          addr_str ? addr_str : "(none)");
	inventory_print(&inv, addr_str && rc == PS_ENOENT ? &addr : NULL, &sb);
	hints_print(&inv, &sb);
	inventory_free(&inv, NULL);
	return rc;
}
