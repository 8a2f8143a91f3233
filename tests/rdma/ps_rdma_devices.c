/*
 * tests/rdma/ps_rdma_devices.c - ps-rdma-devices: what the RDMA transport
 * would use on this machine.
 *
 *   ps-rdma-devices                      every device, port and GID
 *   ps-rdma-devices --addr A [--device NAME] [--gid-index N]
 *                                        the choice for node address A
 *                                        (transport.rdma_device,
 *                                        transport.rdma_gid_index), or the
 *                                        error the transport would give
 *
 * Exit status: 0 listed / chosen, 1 no choice (the error is on stderr),
 * 2 usage.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma_device.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: ps-rdma-devices [--addr A [--device NAME] "
	        "[--gid-index N]]\n"
	        "  Without --addr: list every RDMA device, port and GID.\n"
	        "  --addr A        the node's IPv4 address: print the device, "
	        "port and GID\n"
	        "                  the RDMA transport would choose, or why "
	        "none fits\n"
	        "  --device NAME   as transport.rdma_device (default: "
	        "automatic)\n"
	        "  --gid-index N   as transport.rdma_gid_index (default -1: "
	        "automatic)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"addr", required_argument, NULL, 'a'},
	    {"device", required_argument, NULL, 'd'},
	    {"gid-index", required_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	ps_rdma_device_opts opts = {
	    .device = NULL, .gid_index = -1, .addr = NULL};
	int c;
	while ((c = getopt_long(argc, argv, "a:d:g:h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'a':
			opts.addr = optarg;
			break;
		case 'd':
			opts.device = optarg;
			break;
		case 'g':
			opts.gid_index = (int)strtol(optarg, &end, 10);
			if (!optarg[0] || *end) {
				fprintf(stderr,
				        "ps-rdma-devices: --gid-index %s: not "
				        "a number\n",
				        optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ps-rdma-devices: unexpected argument '%s'\n",
		        argv[optind]);
		usage(stderr);
		return 2;
	}

	char *buf = malloc(PS_RDMA_ERR_LEN);
	if (!buf) {
		fprintf(stderr, "ps-rdma-devices: out of memory\n");
		return 1;
	}
	int rc;
	if (!opts.addr && !opts.device && opts.gid_index == -1) {
		ps_rdma_device_list(buf, PS_RDMA_ERR_LEN);
		fputs(buf, stdout);
		rc = 0;
	} else {
		ps_rdma_device dev;
		int err =
		    ps_rdma_device_open(&opts, &dev, buf, PS_RDMA_ERR_LEN);
		if (err == PS_OK) {
			char gs[INET6_ADDRSTRLEN];
			printf("%s port %u GID index %d %s (%s, netdev %s, "
			       "port %s, active MTU %d)\n",
			       dev.name, dev.port, dev.gid_index,
			       ps_rdma_gid_str(&dev.gid, gs, sizeof(gs)),
			       ps_rdma_gid_type_str(dev.gid_type),
			       dev.netdev[0] ? dev.netdev : "-",
			       ps_rdma_port_state_str(dev.port_state),
			       128 << dev.active_mtu);
			ps_rdma_device_close(&dev);
			rc = 0;
		} else {
			fprintf(stderr, "ps-rdma-devices: %s: %s",
			        ps_strerror(err), buf);
			rc = 1;
		}
	}
	free(buf);
	return rc;
}
