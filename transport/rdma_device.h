/*
 * transport/rdma_device.h - which RDMA device, port and GID a node uses.
 *
 * The first piece of the verbs transport: given the configuration
 * (transport.rdma_device, transport.rdma_gid_index) and the node's IPv4
 * address, open the device and pick the port and the GID that RC queue
 * pairs will use as their source.
 *
 * Automatic (the default: device "" and GID index -1) means the RoCE v2
 * GID that carries the node's address: ::ffff:a.b.c.d, on a port in state
 * ACTIVE, on any device (the first in libibverbs' device order). Setting
 * transport.rdma_device limits the search to that device. Setting
 * transport.rdma_gid_index takes that GID table entry as given, on the
 * first ACTIVE port where it is valid; this is the override for networks
 * whose GIDs do not carry IPv4 addresses (InfiniBand, RoCE v1). With an
 * explicit index and several devices, an entry that carries the address is
 * preferred.
 *
 * When nothing fits, the error message says why, then lists every device,
 * port (state, link layer, MTU) and valid GID (index, GID, type, netdev)
 * that was found, then says which keys to set. It is written for a person
 * on a machine they do not know: read it whole.
 *
 * Soft-RoCE (rdma_rxe) in scripts/rdma-vm: device rxe0, port 1, GIDs
 * [0] fe80::... and [1] ::ffff:192.0.2.1, both RoCE v2; the automatic
 * choice for 192.0.2.1 is rxe0 / 1 / 1.
 *
 * Threads: no global state; a ps_rdma_device belongs to its caller.
 * libibverbs itself is thread-safe for these calls.
 */
#ifndef ORDO_TRANSPORT_RDMA_DEVICE_H
#define ORDO_TRANSPORT_RDMA_DEVICE_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "ordo/error.h"

/* Room for an error message with a full listing of a few devices. Longer
 * messages are cut and end in "[...]". */
#define PS_RDMA_ERR_LEN 8192

typedef struct ps_rdma_device_opts {
	const char *device; /* transport.rdma_device: NULL or "" = automatic */
	int gid_index;      /* transport.rdma_gid_index: -1 = automatic */
	const char *addr;   /* the node's IPv4 address, "a.b.c.d"; may be
	                     * NULL or "" only with an explicit gid_index */
} ps_rdma_device_opts;

typedef struct ps_rdma_device {
	struct ibv_context *ctx; /* open; ps_rdma_device_close() closes it */
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	enum ibv_gid_type gid_type;
	char netdev[IF_NAMESIZE]; /* "" when the GID has no net device */
	enum ibv_mtu active_mtu;
	enum ibv_port_state port_state;
	uint8_t link_layer; /* IBV_LINK_LAYER_* */
} ps_rdma_device;

/*
 * Opens the device and picks the port and GID described above.
 * On success returns PS_OK and fills *dev_p (the caller owns dev_p->ctx
 * and closes it with ps_rdma_device_close()). On failure *dev_p is not
 * written, why holds the message (at most whylen bytes, NUL-terminated;
 * PS_RDMA_ERR_LEN is enough for a few devices) and the return is:
 *   PS_EINVAL  opts->addr is not an IPv4 address, or gid_index < -1
 *   PS_ENOENT  no device, or no device/port/GID fits the options
 *   PS_ENOMEM  out of memory
 */
int ps_rdma_device_open(const ps_rdma_device_opts *opts, ps_rdma_device *dev_p,
                        char *why, size_t whylen);

/* Closes dev->ctx (NULL is fine) and clears *dev. */
void ps_rdma_device_close(ps_rdma_device *dev);

/*
 * Writes the listing of every device, port and valid GID into buf (the
 * same table as in ps_rdma_device_open()'s errors; cut with "[...]" when
 * longer than len). Returns the number of devices found, or -1 when the
 * device list could not be read (buf says why).
 */
int ps_rdma_device_list(char *buf, size_t len);

/* "ACTIVE", "DOWN", "INIT", ... */
const char *ps_rdma_port_state_str(enum ibv_port_state state);

/* "RoCE v2", "RoCE v1", "IB". */
const char *ps_rdma_gid_type_str(enum ibv_gid_type type);

/* The GID in IPv6 notation ("::ffff:192.0.2.1"); buf has >= 46 bytes. */
const char *ps_rdma_gid_str(const union ibv_gid *gid, char *buf, size_t len);

#endif /* ORDO_TRANSPORT_RDMA_DEVICE_H */
