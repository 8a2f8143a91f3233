/*
 * tests/rdma/gpudirect.c - `rdma_gpudirect ADDR DEVICE`: the transports
 * and device memory (GPUDirect RDMA; transport/transport.h, DESIGN
 * "Device memory"; docs/rdma.md, "Device memory"). Guest only
 * (the Soft-RoCE VM, ORDO_RDMA_VM=1).
 *
 * The VM has no GPU. Host memory stands in for device memory: an mmap'ed
 * region registered with ps_transport_reg_ex as PS_MEM_CUDA without a
 * dma-buf - ibv_reg_mr on the pointer, the very call the nvidia-peermem
 * module serves for a real device pointer - and then made PROT_NONE. The
 * registration keeps its pages pinned and rxe reads them through the
 * kernel's own mapping of those pages, so the NIC can still send them,
 * while any read of them by this process's CPU (a memcpy into a send
 * buffer, a checksum, a debug print) is a SIGSEGV: the sends below
 * succeeding with every byte right is the proof that the transport let
 * only the NIC touch them, as it must for device memory, which the CPU
 * cannot read at all.
 *
 * Checks, in one process that owns both rdma transports (a listener on
 * ADDR and a sender connected to it; the owner-thread rule allows it, as
 * in tests/transport/conformance.c):
 *  1. tcp refuses device memory, naming why (ZeroMQ reads payloads with
 *     the CPU), at registration and at send; caps.device_memory is 0 for
 *     tcp and 1 for rdma.
 *  2. rdma before it has a device: PS_ENOTSUP, "no RDMA device bound yet";
 *     ps_transport_reg refuses PS_MEM_CUDA (ps_transport_reg_ex only).
 *  3. payloads of 4 B, 1 KiB, 60 KiB, 64 KiB and 1 MiB at odd offsets of
 *     the PROT_NONE region, sent with ps_transport_send_mem(PS_MEM_CUDA)
 *     and again with plain ps_transport_send (the registration decides,
 *     not the claim): the receiver checks every byte, each free callback
 *     runs once.
 *  4. refusals, PS_EINVAL and no free callback: a payload said to be
 *     device memory in no registration, one running past the region's
 *     end (said to be either kind), a device payload whose header cannot
 *     go in an RTS; the connection still works afterwards.
 *  5. a real dma-buf (Linux's /dev/udmabuf from a sealed memfd or, where
 *     the kernel lacks it - Debian's 6.1 does - a dumb buffer of the vgem
 *     driver exported with DRM PRIME) registered on DEVICE: either it
 *     works, and the payloads are sent from it PROT_NONE as in 3, or it
 *     fails with PS_ENOTSUP and "rdma: device DEVICE cannot register
 *     dma-buf memory: ibv_reg_dmabuf_mr: ..." (rxe on 6.1 has no dma-buf
 *     support). Where no dma-buf can be had this part is skipped, said on
 *     stderr.
 *
 * Waits are bounded by PATIENCE_MS only to end a hang, never to judge
 * speed. Exit 0: as expected; 1: a failure (said on stderr); 77: not in
 * the VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/udmabuf.h>

#include "transport/transport.h"

#define PATIENCE_MS 60000
#define EP_CAP      256
#define REGION      ((size_t)4 << 20) /* the stand-in for device memory */
#define DMABUF_LEN  REGION /* every span fits */

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "gpudirect: FAIL: " __VA_ARGS__);      \
			fprintf(stderr, "\n");                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_PS(expr, want)                                                   \
	do {                                                                   \
		int rc_ = (expr);                                              \
		CHECK(rc_ == (want), "%s: got \"%s\", want \"%s\"", #expr,     \
		      ps_strerror(rc_), ps_strerror(want));                    \
	} while (0)

/* The byte at offset i of a region: a pattern that differs between
 * neighbouring bytes and between 2 KiB pages. */
static unsigned char pat(size_t i, unsigned seed)
{
	return (unsigned char)(i * 131u + (i >> 11) + seed);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(i, seed);
}

/* ---- free callbacks: counted, and never a look at the payload ----------- */

static pthread_mutex_t free_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t free_cv;
static int frees;

/* May run on a transport's progress thread (transport.h). */
static void counted_free(void *data, void *hint)
{
	(void)data; /* PROT_NONE: not to be read, here least of all */
	(void)hint;
	pthread_mutex_lock(&free_mu);
	frees++;
	pthread_cond_broadcast(&free_cv);
	pthread_mutex_unlock(&free_mu);
}

/* Waits until `want` callbacks ran (PATIENCE_MS ends a hang); the count. */
static int wait_frees(int want)
{
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += PATIENCE_MS / 1000;
	pthread_mutex_lock(&free_mu);
	while (frees < want &&
	       pthread_cond_timedwait(&free_cv, &free_mu, &end) != ETIMEDOUT)
		;
	int n = frees;
	pthread_mutex_unlock(&free_mu);
	return n;
}

static int frees_now(void)
{
	pthread_mutex_lock(&free_mu);
	int n = frees;
	pthread_mutex_unlock(&free_mu);
	return n;
}

/* A CPU read of the PROT_NONE region: say what it means, then die of it
 * (the default action, on the faulting instruction again). */
static void on_segv(int sig)
{
	static const char msg[] =
	    "gpudirect: FAIL: SIGSEGV - most likely the CPU read memory "
	    "registered as device memory (PROT_NONE here), which the "
	    "transport must leave to the NIC\n";
	ssize_t rc = write(2, msg, sizeof(msg) - 1);
	(void)rc;
	signal(sig, SIG_DFL);
}

/* ---- the transports ------------------------------------------------------ */

static ps_transport *make(const char *backend, uint64_t id)
{
	ps_transport_opts o = {.id = id, .send_timeout_ms = PATIENCE_MS,
	                       .connect_timeout_ms = PATIENCE_MS,
	                       .io_threads = 1, .rdma_gid_index = -1};
	ps_transport *t = NULL;
	CHECK_PS(ps_transport_create(backend, &o, &t), PS_OK);
	return t;
}

static ps_reg_req cuda_req(void *addr, size_t len, int fd, uint64_t off)
{
	ps_reg_req q = {.addr = addr, .len = len, .kind = PS_MEM_CUDA,
	                .dmabuf_fd = fd, .dmabuf_offset = off};
	return q;
}

/* Receives the next message and checks it is "NAME" with len bytes
 * pat(off + i, seed). */
static void expect(ps_transport *r, const char *name, size_t off, size_t len,
                   unsigned seed)
{
	ps_msg *m = NULL;
	CHECK_PS(ps_transport_recv(r, PATIENCE_MS, &m), PS_OK);
	CHECK(m->hdr_len == strlen(name) && !memcmp(m->hdr, name, m->hdr_len),
	      "expected message %s, got a header of %zu bytes \"%.*s\"", name,
	      m->hdr_len, (int)m->hdr_len, (const char *)m->hdr);
	CHECK(m->payload_len == len, "%s: %zu payload bytes, want %zu", name,
	      m->payload_len, len);
	const unsigned char *p = m->payload;
	for (size_t i = 0; i < len; i++)
		CHECK(p[i] == pat(off + i, seed),
		      "%s: byte %zu is 0x%02x, want 0x%02x", name, i, p[i],
		      pat(off + i, seed));
	ps_msg_free(&m);
}

typedef struct span {
	size_t off, len;
} span;

/* 4 B, 1 KiB, 60 KiB (copied if it were host memory), 64 KiB (ZC_MIN),
 * 1 MiB, at odd offsets, and the last 4 bytes of the region. */
static const span spans[] = {
    {3, 4},
    {4096 + 1, 1024},
    {100003, 60 * 1024},
    {(1 << 20) + 5, 64 * 1024},
    {(2 << 20) + 7, 1 << 20},
    {REGION - 4, 4},
};
#define NSPANS (sizeof(spans) / sizeof(spans[0]))

/* Sends every span of base (registered, PROT_NONE) - with
 * ps_transport_send_mem(PS_MEM_CUDA), then (plain) ps_transport_send - and
 * checks what r receives; the free callbacks must all run. */
static void send_spans(ps_transport *s, ps_peer p, ps_transport *r,
                       unsigned char *base, size_t size, unsigned seed,
                       const char *what)
{
	char name[64];
	int before = frees_now(), sent = 0;

	for (int plain = 0; plain < 2; plain++) {
		for (size_t k = 0; k < NSPANS; k++) {
			const span *sp = &spans[k];
			if (sp->off + sp->len > size)
				continue;
			snprintf(name, sizeof(name), "%s-%s-%zu", what,
			         plain ? "send" : "send_mem", sp->len);
			int rc = plain ? ps_transport_send(
			                     s, p, name, strlen(name),
			                     base + sp->off, sp->len,
			                     counted_free, NULL)
			               : ps_transport_send_mem(
			                     s, p, name, strlen(name),
			                     base + sp->off, sp->len,
			                     PS_MEM_CUDA, counted_free, NULL);
			CHECK(rc == PS_OK, "%s: %s", name, ps_strerror(rc));
			sent++;
			expect(r, name, sp->off, sp->len, seed);
			fprintf(stderr,
			        "gpudirect: %s: %zu bytes at offset %zu "
			        "received intact\n",
			        name, sp->len, sp->off);
		}
	}
	CHECK(wait_frees(before + sent) == before + sent,
	      "%s: %d of %d free callbacks ran", what, frees_now() - before,
	      sent);
}

/* ---- a dma-buf without a GPU -------------------------------------------- */

/* The DRM interface (include/uapi/drm/drm.h, drm_mode.h; a stable ABI),
 * declared here: the build machine has no DRM headers (libdrm-dev). */
struct gd_drm_version {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};
struct gd_drm_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};
struct gd_drm_map_dumb {
	uint32_t handle, pad;
	uint64_t offset;
};
struct gd_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};
#define GD_DRM_IOCTL_VERSION     _IOWR('d', 0x00, struct gd_drm_version)
#define GD_DRM_IOCTL_PRIME_TO_FD _IOWR('d', 0x2d, struct gd_drm_prime_handle)
#define GD_DRM_IOCTL_CREATE_DUMB _IOWR('d', 0xB2, struct gd_drm_create_dumb)
#define GD_DRM_IOCTL_MAP_DUMB    _IOWR('d', 0xB3, struct gd_drm_map_dumb)

typedef struct dmabuf {
	int fd;       /* the dma-buf */
	int owner_fd; /* the memfd or the DRM device, closed at the end */
	unsigned char *map;
	size_t len;
	const char *source;
} dmabuf;

/* modprobe (the guest runs as root with the kernel's modules). */
static void load_module(const char *name)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "modprobe -q %s 2>/dev/null", name);
	int rc = system(cmd);
	(void)rc; /* what counts is whether the device node came */
}

/* /dev/udmabuf: a dma-buf of a sealed memfd's pages. */
static int udmabuf_make(dmabuf *b, char *why, size_t whylen)
{
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0 && errno == ENOENT) {
		load_module("udmabuf");
		dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	}
	if (dev < 0) {
		snprintf(why, whylen, "no /dev/udmabuf (%s: this kernel was "
		         "built without CONFIG_UDMABUF, or the module is "
		         "missing)", strerror(errno));
		return -1;
	}
	int mfd = memfd_create("ordo-gpudirect", MFD_ALLOW_SEALING);
	CHECK(mfd >= 0, "memfd_create: %s", strerror(errno));
	CHECK(ftruncate(mfd, (off_t)b->len) == 0, "ftruncate: %s",
	      strerror(errno));
	/* udmabuf takes only memfds that cannot shrink under it */
	CHECK(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) == 0, "F_ADD_SEALS: %s",
	      strerror(errno));
	struct udmabuf_create c = {.memfd = (uint32_t)mfd,
	                           .flags = UDMABUF_FLAGS_CLOEXEC,
	                           .offset = 0,
	                           .size = b->len};
	b->fd = ioctl(dev, UDMABUF_CREATE, &c);
	int err = errno;
	close(dev);
	if (b->fd < 0) {
		close(mfd);
		snprintf(why, whylen, "UDMABUF_CREATE: %s", strerror(err));
		return -1;
	}
	b->map = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
	              0);
	CHECK(b->map != MAP_FAILED, "mmap of the memfd: %s", strerror(errno));
	b->owner_fd = mfd;
	b->source = "udmabuf (a sealed memfd)";
	return 0;
}

/* vgem (a DRM driver with memory and no hardware): a dumb buffer,
 * exported as a dma-buf by PRIME. */
static int vgem_make(dmabuf *b, char *why, size_t whylen)
{
	char path[64], name[32];
	int card = -1;

	load_module("vgem");
	for (int i = 0; i < 64 && card < 0; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct gd_drm_version v = {.name_len = sizeof(name) - 1,
		                           .name = name};
		memset(name, 0, sizeof(name));
		if (ioctl(fd, GD_DRM_IOCTL_VERSION, &v) == 0 &&
		    strcmp(name, "vgem") == 0)
			card = fd;
		else
			close(fd);
	}
	if (card < 0) {
		snprintf(why, whylen, "no vgem DRM device (modprobe vgem made no "
		         "/dev/dri/cardN named vgem)");
		return -1;
	}
	struct gd_drm_create_dumb c = {.width = 1024, .bpp = 8,
	                               .height = (uint32_t)(b->len / 1024)};
	struct gd_drm_prime_handle h = {.fd = -1};
	struct gd_drm_map_dumb m = {0};
	if (ioctl(card, GD_DRM_IOCTL_CREATE_DUMB, &c) != 0 ||
	    c.size < b->len) {
		snprintf(why, whylen, "vgem: DRM_IOCTL_MODE_CREATE_DUMB: %s",
		         strerror(errno));
		goto fail;
	}
	h.handle = c.handle;
	h.flags = O_CLOEXEC | O_RDWR;
	if (ioctl(card, GD_DRM_IOCTL_PRIME_TO_FD, &h) != 0) {
		snprintf(why, whylen, "vgem: DRM_IOCTL_PRIME_HANDLE_TO_FD: %s",
		         strerror(errno));
		goto fail;
	}
	m.handle = c.handle;
	if (ioctl(card, GD_DRM_IOCTL_MAP_DUMB, &m) != 0) {
		snprintf(why, whylen, "vgem: DRM_IOCTL_MODE_MAP_DUMB: %s",
		         strerror(errno));
		close(h.fd);
		goto fail;
	}
	b->map = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, card,
	              (off_t)m.offset);
	if (b->map == MAP_FAILED) {
		snprintf(why, whylen, "vgem: mmap of the dumb buffer: %s",
		         strerror(errno));
		close(h.fd);
		goto fail;
	}
	b->fd = h.fd;
	b->owner_fd = card;
	b->source = "vgem (a DRM dumb buffer exported by PRIME)";
	return 0;
fail:
	close(card);
	return -1;
}

/* Part 5: a real dma-buf registered as device memory on dev. */
static void dmabuf_part(ps_transport *s, ps_peer p, ps_transport *r,
                        const char *dev)
{
	char why_u[256] = "", why_v[256] = "", why[512] = "", want[128];
	dmabuf b = {.fd = -1, .owner_fd = -1, .len = DMABUF_LEN};
	ps_mr *mr = NULL;

	if (udmabuf_make(&b, why_u, sizeof(why_u)) != 0 &&
	    vgem_make(&b, why_v, sizeof(why_v)) != 0) {
		fprintf(stderr, "gpudirect: SKIP (part 5 only): no dma-buf can "
		        "be made here: %s; %s\n",
		        why_u, why_v);
		return;
	}
	if (why_u[0])
		fprintf(stderr, "gpudirect: %s: using vgem\n", why_u);
	fill(b.map, b.len, 9);
	ps_reg_req q = cuda_req(b.map, b.len, b.fd, 0);
	int rc = ps_transport_reg_ex(s, &q, &mr, why, sizeof(why));
	/* the registration holds the dma-buf: the descriptor may go now */
	close(b.fd);
	if (rc == PS_OK) {
		fprintf(stderr, "gpudirect: %s registered on %s as dma-buf "
		        "device memory\n",
		        b.source, dev);
		CHECK(mprotect(b.map, b.len, PROT_NONE) == 0, "mprotect: %s",
		      strerror(errno));
		send_spans(s, p, r, b.map, b.len, 9, "dmabuf");
		ps_transport_dereg(s, &mr);
	} else {
		snprintf(want, sizeof(want),
		         "rdma: device %s cannot register dma-buf memory: "
		         "ibv_reg_dmabuf_mr: ",
		         dev);
		CHECK(rc == PS_ENOTSUP && !strncmp(why, want, strlen(want)),
		      "dma-buf registration of %s: got \"%s\" (%s), want "
		      "\"%s\" and a reason beginning \"%s\"",
		      b.source, ps_strerror(rc), why, ps_strerror(PS_ENOTSUP),
		      want);
		CHECK(!mr, "a failed registration left an ps_mr");
		fprintf(stderr, "gpudirect: %s refused as it should be: %s\n",
		        b.source, why);
	}
	munmap(b.map, b.len);
	close(b.owner_fd);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	char path[256], ep[EP_CAP], why[512];
	ps_transport_caps caps;
	ps_mr *mr = NULL;
	ps_peer p;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR DEVICE\n", argv[0]);
		return 2;
	}
	const char *addr = argv[1], *dev = argv[2];
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", dev);
	if (!getenv("ORDO_RDMA_VM") || strcmp(getenv("ORDO_RDMA_VM"), "1") ||
	    access(path, F_OK) != 0) {
		printf("SKIP: needs the Soft-RoCE VM (ORDO_RDMA_VM=1, %s)\n",
		       dev);
		return 77;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&free_cv, &ca);
	pthread_condattr_destroy(&ca);

	/* The stand-in for device memory, page-aligned for mprotect. */
	unsigned char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
	                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(region != MAP_FAILED, "mmap: %s", strerror(errno));
	fill(region, REGION, 1);
	ps_reg_req q = cuda_req(region, REGION, -1, 0);

	/* 1. tcp: device memory refused, with the reason. */
	ps_transport *tcp = make("tcp", 0x61);
	ps_transport_caps_of(tcp, &caps);
	CHECK(caps.device_memory == 0, "tcp claims device memory");
	CHECK_PS(ps_transport_reg_ex(tcp, &q, &mr, why, sizeof(why)),
	         PS_ENOTSUP);
	CHECK(!mr && strstr(why, "tcp") && strstr(why, "ZeroMQ"),
	      "tcp's reason names neither tcp nor ZeroMQ: \"%s\"", why);
	fprintf(stderr, "gpudirect: tcp refuses device memory: %s\n", why);
	CHECK_PS(ps_transport_send_mem(tcp, 0, "t", 1, region, 4, PS_MEM_CUDA,
	                               counted_free, NULL),
	         PS_ENOTSUP);
	ps_transport_destroy(&tcp, 0);

	/* 2. rdma without a device yet. */
	ps_transport *r = make("rdma", 0x62);
	CHECK_PS(ps_transport_listen(r, addr, 0, NULL, ep, sizeof(ep)), PS_OK);
	ps_transport *s = make("rdma", 0x63);
	ps_transport_caps_of(s, &caps);
	CHECK(caps.device_memory == 1, "rdma does not claim device memory");
	why[0] = '\0';
	CHECK_PS(ps_transport_reg_ex(s, &q, &mr, why, sizeof(why)),
	         PS_ENOTSUP);
	CHECK(!mr && strstr(why, "rdma: no RDMA device bound yet"),
	      "before connect: \"%s\"", why);
	fprintf(stderr, "gpudirect: before connect: %s\n", why);
	CHECK_PS(ps_transport_connect(s, ep, &p), PS_OK);
	CHECK_PS(ps_transport_reg(s, region, REGION, PS_MEM_CUDA, &mr),
	         PS_ENOTSUP);
	CHECK(!mr, "ps_transport_reg left an ps_mr");

	/* 3. the stand-in registered by address, then made unreadable. */
	why[0] = '\0';
	int rc = ps_transport_reg_ex(s, &q, &mr, why, sizeof(why));
	CHECK(rc == PS_OK && mr, "registering %zu bytes as device memory by "
	      "address on %s: %s: %s", REGION, dev, ps_strerror(rc), why);
	CHECK(mprotect(region, REGION, PROT_NONE) == 0, "mprotect: %s",
	      strerror(errno));
	struct sigaction sa = {.sa_handler = on_segv};
	sigaction(SIGSEGV, &sa, NULL);
	send_spans(s, p, r, region, REGION, 1, "byaddr");

	/* 4. refusals: nothing sent, nothing handed back, nothing read. */
	static unsigned char plain[4096]; /* readable: that is not the point */
	int before = frees_now();
	CHECK_PS(ps_transport_send_mem(s, p, "x", 1, plain, sizeof(plain),
	                               PS_MEM_CUDA, counted_free, NULL),
	         PS_EINVAL);
	for (int k = 0; k < 2; k++)
		CHECK_PS(ps_transport_send_mem(
		             s, p, "x", 1, region + REGION - 100, 200,
		             k ? PS_MEM_HOST : PS_MEM_CUDA, counted_free, NULL),
		         PS_EINVAL);
	size_t big_hdr = 40 * 1024; /* > the RTS's 32 KiB */
	char *hdr = calloc(1, big_hdr);
	CHECK(hdr, "out of memory");
	CHECK_PS(ps_transport_send_mem(s, p, hdr, big_hdr, region + 64, 64,
	                               PS_MEM_CUDA, counted_free, NULL),
	         PS_EINVAL);
	free(hdr);
	CHECK(frees_now() == before, "a refused send handed its payload back");
	/* the connection is as before */
	CHECK_PS(ps_transport_send_mem(s, p, "after", 5, region + 11, 8,
	                               PS_MEM_CUDA, counted_free, NULL),
	         PS_OK);
	expect(r, "after", 11, 8, 1);
	CHECK(wait_frees(before + 1) == before + 1, "no free callback");
	fprintf(stderr, "gpudirect: refusals: PS_EINVAL for device memory "
	        "outside a registration, across its end, with a 40 KiB "
	        "header\n");

	/* 5. a dma-buf. */
	dmabuf_part(s, p, r, dev);

	ps_transport_dereg(s, &mr);
	ps_transport_destroy(&s, 1000);
	ps_transport_destroy(&r, 1000);
	munmap(region, REGION);
	pthread_cond_destroy(&free_cv);
	fprintf(stderr, "gpudirect: all checks passed\n");
	return 0;
}
