/*
 * tests/rdma/test_rdma_device.c - device, port and GID selection
 * (transport/rdma_device.h).
 *
 *   test_rdma_device host    on a machine without RDMA devices (this
 *                            project's build hosts): every call fails with
 *                            the "no RDMA device was found" message, which
 *                            names the config keys; argument checks; the
 *                            error buffer is never overrun. Skips (77) where
 *                            devices exist.
 *   test_rdma_device guest   inside scripts/rdma-vm (ORDO_RDMA_VM=1): rxe0,
 *                            port 1, GIDs [0] fe80::... and
 *                            [1] ::ffff:192.0.2.1. Automatic and explicit
 *                            choices, and the listing error for a wrong
 *                            device, a wrong GID index and an address no GID
 *                            carries. Skips (77) outside the VM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma_device.h"

#define VM_ADDR "192.0.2.1"

static char err[PS_RDMA_ERR_LEN];

static int open_dev(const char *device, int gid_index, const char *addr,
                    ps_rdma_device *dev)
{
	ps_rdma_device_opts o = {device, gid_index, addr};
	memset(err, 0x5a, sizeof(err));
	int rc = ps_rdma_device_open(&o, dev, err, sizeof(err));
	/* Every failure explains itself; success leaves no message. */
	assert_non_null(memchr(err, '\0', sizeof(err)));
	if (rc != PS_OK)
		assert_true(strlen(err) > 0);
	return rc;
}

static void assert_has(const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("expected \"%s\" in:\n%s", part, text);
}

/* The part of every error that tells the reader what to set. */
static void assert_names_keys(const char *text)
{
	assert_has(text, "transport.rdma_device");
	assert_has(text, "transport.rdma_gid_index");
	assert_has(text, "cluster.advertise_host");
}

/* ---- host: no RDMA device ---------------------------------------------- */

static void no_device_automatic(void **state)
{
	(void)state;
	ps_rdma_device dev;
	memset(&dev, 0x77, sizeof(dev));
	ps_rdma_device before = dev;
	assert_int_equal(open_dev(NULL, -1, "10.0.0.1", &dev), PS_ENOENT);
	assert_has(err, "no RDMA device was found");
	assert_has(err, "RDMA devices found: none");
	assert_has(err, "node address 10.0.0.1");
	assert_names_keys(err);
	/* *dev_p is written only on success. */
	assert_memory_equal(&dev, &before, sizeof(dev));
	print_message("the error on this host:\n%s", err);
}

static void no_device_explicit(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev("mlx5_0", 3, "10.0.0.1", &dev), PS_ENOENT);
	assert_has(err, "no RDMA device was found");
	assert_has(err, "transport.rdma_device = \"mlx5_0\"");
	assert_has(err, "transport.rdma_gid_index = 3");
	assert_names_keys(err);
}

static void bad_arguments(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev(NULL, -1, "not-an-address", &dev), PS_EINVAL);
	assert_has(err, "\"not-an-address\" is not an IPv4 address");
	assert_names_keys(err);
	assert_int_equal(open_dev(NULL, -1, "::1", &dev), PS_EINVAL);
	assert_int_equal(open_dev(NULL, -1, "10.0.0.256", &dev), PS_EINVAL);
	assert_int_equal(open_dev(NULL, -2, "10.0.0.1", &dev), PS_EINVAL);
	assert_has(err, "transport.rdma_gid_index = -2");
	assert_int_equal(open_dev(NULL, -1, NULL, &dev), PS_EINVAL);
	assert_has(err, "no IPv4 address");
	assert_int_equal(open_dev("", -1, "", &dev), PS_EINVAL);
}

/* A short buffer gets a cut, NUL-terminated message (ASan checks the
 * bounds); a zero-length one is never written. */
static void short_buffers(void **state)
{
	(void)state;
	ps_rdma_device_opts o = {NULL, -1, "10.0.0.1"};
	ps_rdma_device dev;
	for (size_t len = 1; len < 64; len++) {
		char *b = malloc(len);
		assert_non_null(b);
		assert_int_not_equal(ps_rdma_device_open(&o, &dev, b, len),
		                     PS_OK);
		assert_true(strlen(b) < len);
		free(b);
	}
	char b[80];
	assert_int_not_equal(ps_rdma_device_open(&o, &dev, b, sizeof(b)),
	                     PS_OK);
	assert_int_equal(strlen(b), sizeof(b) - 1);
	assert_has(b, "[...]");
	char none = 'x';
	assert_int_not_equal(ps_rdma_device_open(&o, &dev, &none, 0), PS_OK);
	assert_int_equal(none, 'x');
}

static void list_none(void **state)
{
	(void)state;
	char b[512];
	int n = ps_rdma_device_list(b, sizeof(b));
	assert_true(n <= 0);
	assert_has(b, "RDMA devices found: none");
}

static void gid_strings(void **state)
{
	(void)state;
	union ibv_gid g;
	char s[INET6_ADDRSTRLEN];
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 192;
	g.raw[13] = 0;
	g.raw[14] = 2;
	g.raw[15] = 1;
	assert_string_equal(ps_rdma_gid_str(&g, s, sizeof(s)),
	                    "::ffff:192.0.2.1");
	assert_string_equal(ps_rdma_gid_type_str(IBV_GID_TYPE_ROCE_V2),
	                    "RoCE v2");
	assert_string_equal(ps_rdma_gid_type_str(IBV_GID_TYPE_ROCE_V1),
	                    "RoCE v1");
	assert_string_equal(ps_rdma_gid_type_str(IBV_GID_TYPE_IB), "IB");
}

/* ---- guest: rxe0 in scripts/rdma-vm -------------------------------------- */

static void assert_rxe0_gid1(const ps_rdma_device *dev)
{
	char s[INET6_ADDRSTRLEN];
	assert_non_null(dev->ctx);
	assert_string_equal(dev->name, "rxe0");
	assert_int_equal(dev->port, 1);
	assert_int_equal(dev->gid_index, 1);
	assert_string_equal(ps_rdma_gid_str(&dev->gid, s, sizeof(s)),
	                    "::ffff:" VM_ADDR);
	assert_int_equal(dev->gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_string_equal(dev->netdev, "rxenet0");
	assert_int_equal(dev->port_state, IBV_PORT_ACTIVE);
	assert_int_equal(dev->link_layer, IBV_LINK_LAYER_ETHERNET);
	/* The context is usable: the chosen GID reads back. */
	union ibv_gid g;
	assert_int_equal(ibv_query_gid(dev->ctx, dev->port, dev->gid_index, &g),
	                 0);
	assert_memory_equal(&g, &dev->gid, sizeof(g));
}

static void vm_automatic(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev(NULL, -1, VM_ADDR, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
	assert_null(dev.ctx);
	ps_rdma_device_close(&dev); /* twice is harmless */
	assert_int_equal(open_dev("", -1, VM_ADDR, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
}

static void vm_explicit(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev("rxe0", 1, VM_ADDR, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
	assert_int_equal(open_dev("rxe0", -1, VM_ADDR, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
	assert_int_equal(open_dev(NULL, 1, VM_ADDR, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
	/* An explicit index needs no address... */
	assert_int_equal(open_dev("rxe0", 1, NULL, &dev), PS_OK);
	assert_rxe0_gid1(&dev);
	ps_rdma_device_close(&dev);
	/* ...and is taken as given (the override for IB / RoCE v1). */
	assert_int_equal(open_dev("rxe0", 0, VM_ADDR, &dev), PS_OK);
	assert_int_equal(dev.gid_index, 0);
	assert_int_equal(dev.gid.raw[0], 0xfe);
	assert_int_equal(dev.gid.raw[1], 0x80);
	ps_rdma_device_close(&dev);
}

/* What every listing error in the VM shows. */
static void assert_vm_listing(const char *text)
{
	assert_has(text, "RDMA devices found: 1");
	assert_has(text, "rxe0 port 1: state ACTIVE, link layer "
	                 "Ethernet, active MTU 1024");
	assert_has(text, "index  GID");
	assert_has(text, "::ffff:" VM_ADDR);
	assert_has(text, "fe80::");
	assert_has(text, "RoCE v2  rxenet0");
	assert_has(text, VM_ADDR " (rxe0 port 1, GID index 1)");
	assert_names_keys(text);
}

static void vm_wrong_device(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev("mlx5_9", -1, VM_ADDR, &dev), PS_ENOENT);
	assert_has(err, "no RDMA device is named \"mlx5_9\"");
	assert_vm_listing(err);
	print_message("wrong device:\n%s", err);
}

static void vm_wrong_gid_index(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev("rxe0", 7, VM_ADDR, &dev), PS_ENOENT);
	assert_has(err, "RDMA device rxe0 has no valid GID at index 7");
	assert_vm_listing(err);
	print_message("wrong GID index:\n%s", err);
	assert_int_equal(open_dev(NULL, 1000, VM_ADDR, &dev), PS_ENOENT);
	assert_has(err, "no RDMA device has a valid GID at index 1000");
	assert_vm_listing(err);
}

static void vm_wrong_address(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev(NULL, -1, "10.9.9.9", &dev), PS_ENOENT);
	assert_has(err, "no RoCE v2 GID carries the node's address 10.9.9.9 "
	                "(GID ::ffff:10.9.9.9) on an ACTIVE port of any "
	                "device");
	assert_vm_listing(err);
	print_message("wrong address:\n%s", err);
	assert_int_equal(open_dev("rxe0", -1, "192.0.2.2", &dev), PS_ENOENT);
	assert_has(err, "of rxe0");
	assert_vm_listing(err);
}

/* The node's own GID is marked in the listing. */
static void vm_marks_this_node(void **state)
{
	(void)state;
	ps_rdma_device dev;
	assert_int_equal(open_dev("rxe1", -1, VM_ADDR, &dev), PS_ENOENT);
	assert_has(err, "IPv4 " VM_ADDR " (this node)");
}

static void vm_list(void **state)
{
	(void)state;
	char b[PS_RDMA_ERR_LEN];
	assert_int_equal(ps_rdma_device_list(b, sizeof(b)), 1);
	assert_has(b, "rxe0 port 1: state ACTIVE");
	assert_has(b, "::ffff:" VM_ADDR);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "host") == 0) {
		char b[256];
		int n = ps_rdma_device_list(b, sizeof(b));
		if (n > 0) {
			printf("SKIP: this machine has %d RDMA device(s); the "
			       "host test needs a machine without (the VM "
			       "test covers the rest)\n",
			       n);
			return 77;
		}
		const struct CMUnitTest tests[] = {
		    cmocka_unit_test(no_device_automatic),
		    cmocka_unit_test(no_device_explicit),
		    cmocka_unit_test(bad_arguments),
		    cmocka_unit_test(short_buffers),
		    cmocka_unit_test(list_none),
		    cmocka_unit_test(gid_strings),
		};
		return cmocka_run_group_tests_name("rdma_device_host", tests,
		                                   NULL, NULL);
	}
	if (strcmp(mode, "guest") == 0) {
		const char *vm = getenv("ORDO_RDMA_VM");
		if (!vm || strcmp(vm, "1") != 0) {
			printf("SKIP: runs only inside scripts/rdma-vm (the "
			       "CTest test rdma_vm runs it there)\n");
			return 77;
		}
		const struct CMUnitTest tests[] = {
		    cmocka_unit_test(vm_automatic),
		    cmocka_unit_test(vm_explicit),
		    cmocka_unit_test(vm_wrong_device),
		    cmocka_unit_test(vm_wrong_gid_index),
		    cmocka_unit_test(vm_wrong_address),
		    cmocka_unit_test(vm_marks_this_node),
		    cmocka_unit_test(vm_list),
		};
		return cmocka_run_group_tests_name("rdma_device_guest", tests,
		                                   NULL, NULL);
	}
	fprintf(stderr, "usage: test_rdma_device host|guest\n");
	return 2;
}
