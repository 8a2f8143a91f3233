/*
 * proto/wire.c - msgpack encoding and checked decoding of headers and
 * control-message bodies.
 *
 * Layouts (all msgpack arrays; decoders accept and ignore extra trailing
 * elements in every array below, so later versions may append fields):
 *
 *   header    [version, type, job_id, sender, key, partition, iteration,
 *              payload_len, priority]          (uints; priority an int32)
 *   node      [id, role, rank, pid, transport_id, host, endpoint, kid?]
 *              (uints; pid an int32; host, endpoint str; kid absent = 0)
 *   tensor    [name, numel]                    (str, uint > 0)
 *   part      [tensor, index, offset, numel, server]   (uints)
 *   REGISTER  [node, [tensor...]]
 *   WELCOME   [your_id, num_servers, num_workers, [node...], placement,
 *              priorities?, start_iteration?, push_priorities?,
 *              sizes?]
 *              placement: nil, or [partition_size, [tensor...], [part...]]
 *              priorities (optional, with a placement only): one uint32
 *              per tensor, the order of parameter sends, or nil
 *              start_iteration (optional, uint64, absent = 0): the
 *              iteration of the checkpoint the job resumes from
 *              push_priorities (optional; absent: as priorities): the
 *              order of gradient pushes, or nil
 *              sizes (optional; absent or nil: each node's own
 *              config): [push_credit, params_credit, push_partition,
 *              params_partition], the sizes in force in bytes (credit 0 =
 *              unlimited; the scheduler chose them where the config says
 *              auto)
 *              on num_servers servers; rebuilt and checked with
 *              ps_placement_from_parts. nodes are indexed by id: node i has
 *              id i, role scheduler (i == 0), server (1..S, rank i - 1) or
 *              worker (S+1..S+W, rank i - 1 - S).
 *   DONE      [iterations, seconds, bytes_pushed, bytes_received,
 *              last_loss, wait_seconds, efficiency, speedup_bound,
 *              samples_per_second]             (seconds...: float; the
 *              last four may be absent: 5 elements decode with them 0)
 *   ABORT     reason                           (str, < PS_REASON_MAX bytes)
 *
 * DESIGN. Decoding never trusts the bytes: every decoder reads through
 * proto/msgpack_reader.h, whose prescan bounds what msgpack-c allocates
 * by the most objects the message's kind can legitimately hold (the
 * *_OBJECTS bounds below), and whose accessors check every type, range,
 * string length and count against our limits before any allocation of
 * ours. On error the output is cleared, everything allocated is freed and
 * `why` says what was wrong ("header: element 3 (sender) is not an
 * unsigned integer (got a negative integer)"). Decoders do not log: the
 * caller decides.
 *
 * Encoders check what decoders would reject (PS_EINVAL, logged), so a
 * message that leaves one node is accepted by the others.
 */
#include <msgpack.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "proto/msgpack_reader.h"
#include "proto/wire.h"

/* A job that config validation lets run fits in a WELCOME. */
_Static_assert(PS_MAX_NODES == PS_JOB_MAX_NODES,
               "PS_MAX_NODES is the config's PS_JOB_MAX_NODES");

/* ---- names -------------------------------------------------------------- */

static const char *const type_names[PS_MSG_TYPE_END] = {
    [PS_MSG_REGISTER] = "REGISTER",
    [PS_MSG_WELCOME] = "WELCOME",
    [PS_MSG_HEARTBEAT] = "HEARTBEAT",
    [PS_MSG_BARRIER] = "BARRIER",
    [PS_MSG_BARRIER_DONE] = "BARRIER_DONE",
    [PS_MSG_DONE] = "DONE",
    [PS_MSG_SHUTDOWN] = "SHUTDOWN",
    [PS_MSG_ABORT] = "ABORT",
    [PS_MSG_INIT] = "INIT",
    [PS_MSG_PUSH] = "PUSH",
    [PS_MSG_PUSH_ACK] = "PUSH_ACK",
    [PS_MSG_PARAMS] = "PARAMS",
    [PS_MSG_PULL] = "PULL",
    [PS_MSG_PARAMS_ACK] = "PARAMS_ACK",
    [PS_MSG_CKPT] = "CKPT",
    [PS_MSG_CKPT_DONE] = "CKPT_DONE",
    [PS_MSG_CKPT_LATE] = "CKPT_LATE",
    [PS_MSG_FLUSH] = "FLUSH",
    [PS_MSG_FLUSHED] = "FLUSHED",
    [PS_MSG_PROGRESS] = "PROGRESS",
    [PS_MSG_CREDIT] = "CREDIT",
    [PS_MSG_STOP] = "STOP",
    [PS_MSG_STOP_LATE] = "STOP_LATE",
    [PS_MSG_TUNE_HELLO] = "TUNE_HELLO",
    [PS_MSG_PEER_LOST] = "PEER_LOST",
    [PS_MSG_PROBE] = "PROBE",
    [PS_MSG_PROBE_ACK] = "PROBE_ACK",
    [PS_MSG_STOP_READY] = "STOP_READY",
    [PS_MSG_STOP_NOW] = "STOP_NOW",
    [PS_MSG_TIMINGS] = "TIMINGS",
};

const char *ps_msg_type_name(uint32_t type)
{
	if (type < PS_MSG_TYPE_END && type_names[type])
		return type_names[type];
	return "UNKNOWN";
}

const char *ps_role_name(uint32_t role)
{
	switch (role) {
	case PS_ROLE_SCHEDULER:
		return "scheduler";
	case PS_ROLE_SERVER:
		return "server";
	case PS_ROLE_WORKER:
		return "worker";
	default:
		return "unknown";
	}
}

void ps_wire_free(void *data, void *hint)
{
	(void)hint;
	free(data);
}

/* The most objects (every array, map key, map value and scalar counts one)
 * each kind of message can legitimately hold, slack for appended trailing
 * fields included. A header is at most PS_WIRE_HEADER_MAX bytes, so at most
 * that many objects. */
#define SLACK_OBJECTS 64
#define NODE_OBJECTS 9                 /* [8 fields] */
#define TENSOR_OBJECTS 3               /* [name, numel] */
#define PART_OBJECTS 6                 /* [5 fields] */
#define REGISTER_OBJECTS                                                       \
	(1 + NODE_OBJECTS + 1 + (uint64_t)TENSOR_OBJECTS * PS_MAX_TENSORS +    \
	 1 + SLACK_OBJECTS)
#define WELCOME_OBJECTS                                                        \
	(1 + 3 + 1 + (uint64_t)NODE_OBJECTS * PS_MAX_NODES + /* nodes */      \
	 3 + 1 + (uint64_t)TENSOR_OBJECTS * PS_MAX_TENSORS +  /* placement */  \
	 1 + (uint64_t)PART_OBJECTS * PS_MAX_PARTS +                           \
	 2 * (1 + (uint64_t)PS_MAX_TENSORS) + /* both priorities */           \
	 1 + 5 + SLACK_OBJECTS)               /* start, sizes */
#define DONE_OBJECTS (1 + 9 + SLACK_OBJECTS)
/* a u64 body, a reason: one object (the slack lets a wrong type be named) */
#define SCALAR_OBJECTS (1 + SLACK_OBJECTS)

/* ---- encoding helpers --------------------------------------------------- */

typedef struct fixbuf {
	char *p;
	size_t cap;
	size_t len;
} fixbuf;

static int fixbuf_write(void *data, const char *buf, size_t len)
{
	fixbuf *f = data;

	if (len > f->cap - f->len)
		return -1;
	memcpy(f->p + f->len, buf, len);
	f->len += len;
	return 0;
}

static int pack_str(msgpack_packer *pk, const char *s)
{
	return msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* Hands the buffer over, or frees it and reports ENOMEM. */
static int sbuf_finish(msgpack_sbuffer *sb, int failed, void **buf_p,
                       size_t *len_p)
{
	size_t len = sb->size;

	if (failed || !sb->data) {
		msgpack_sbuffer_destroy(sb);
		PS_ERROR("wire: out of memory while encoding");
		return PS_ENOMEM;
	}
	*buf_p = msgpack_sbuffer_release(sb);
	*len_p = len;
	return PS_OK;
}

/* ---- header ------------------------------------------------------------- */

static const char *const header_fields[] = {
    "version",   "type",      "job_id",      "sender",  "key",
    "partition", "iteration", "payload_len", "priority"};
#define HEADER_FIELDS 9

int ps_wire_header_encode(const ps_wire_header *h, void *buf, size_t cap,
                          size_t *len_p)
{
	fixbuf f = {.p = buf, .cap = cap, .len = 0};
	msgpack_packer pk;
	int failed = 0;

	if (!h || !buf || !len_p)
		return PS_EINVAL;
	msgpack_packer_init(&pk, &f, fixbuf_write);
	failed |= msgpack_pack_array(&pk, HEADER_FIELDS + (h->piece   ? 2
	                                                   : h->has_lr ? 1
	                                                               : 0));
	/* version 0 (a zeroed header) means this build's version */
	failed |=
	    msgpack_pack_uint32(&pk, h->version ? h->version : PS_WIRE_VERSION);
	failed |= msgpack_pack_uint32(&pk, h->type);
	failed |= msgpack_pack_uint64(&pk, h->job_id);
	failed |= msgpack_pack_uint32(&pk, h->sender);
	failed |= msgpack_pack_uint32(&pk, h->key);
	failed |= msgpack_pack_uint32(&pk, h->partition);
	failed |= msgpack_pack_uint64(&pk, h->iteration);
	failed |= msgpack_pack_uint64(&pk, h->payload_len);
	failed |= msgpack_pack_int32(&pk, h->priority);
	if (h->has_lr)
		failed |= msgpack_pack_double(&pk, h->lr);
	else if (h->piece)
		failed |= msgpack_pack_nil(&pk);
	if (h->piece)
		failed |= msgpack_pack_uint32(&pk, h->piece);
	if (failed) {
		PS_ERROR("wire: header does not fit in %zu bytes", cap);
		return PS_EINVAL;
	}
	*len_p = f.len;
	return PS_OK;
}

static int header_walk(ps_mpr *d, const msgpack_object *top, ps_wire_header *h)
{
	const msgpack_object_array *a = NULL;
	uint64_t v[HEADER_FIELDS - 1];
	char name[48];
	int32_t prio = 0;
	int rc;

	rc = ps_mpr_array(d, top, "the message", 1, UINT32_MAX, &a);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_uint(d, &a->ptr[0], "element 0 (version)", UINT32_MAX, &v[0]);
	if (rc != PS_OK)
		return rc;
	if (v[0] != PS_WIRE_VERSION)
		return ps_mpr_bad(d,
		           "unsupported protocol version %llu (this build "
		           "speaks %d)",
		           (unsigned long long)v[0], PS_WIRE_VERSION);
	if (a->size < HEADER_FIELDS)
		return ps_mpr_bad(d, "%u elements, expected at least %d", a->size,
		           HEADER_FIELDS);
	for (int i = 1; i < HEADER_FIELDS - 1; i++) {
		/* job_id, iteration and payload_len are 64-bit */
		uint64_t max =
		    (i == 2 || i == 6 || i == 7) ? UINT64_MAX : UINT32_MAX;

		snprintf(name, sizeof(name), "element %d (%s)", i,
		         header_fields[i]);
		rc = ps_mpr_uint(d, &a->ptr[i], name, max, &v[i]);
		if (rc != PS_OK)
			return rc;
	}
	snprintf(name, sizeof(name), "element 8 (priority)");
	rc = ps_mpr_i32(d, &a->ptr[8], name, &prio);
	if (rc != PS_OK)
		return rc;
	if (v[1] < PS_MSG_REGISTER || v[1] >= PS_MSG_TYPE_END)
		return ps_mpr_bad(d, "unknown message type %llu (valid: %d..%d)",
		           (unsigned long long)v[1], PS_MSG_REGISTER,
		           PS_MSG_TYPE_END - 1);
	h->version = (uint32_t)v[0];
	h->type = (uint32_t)v[1];
	h->job_id = v[2];
	h->sender = (uint32_t)v[3];
	h->key = (uint32_t)v[4];
	h->partition = (uint32_t)v[5];
	h->iteration = v[6];
	h->payload_len = v[7];
	h->priority = prio;
	h->has_lr = 0;
	h->lr = 0;
	if (a->size > HEADER_FIELDS) {
		const msgpack_object *o = &a->ptr[HEADER_FIELDS];
		if (o->type == MSGPACK_OBJECT_FLOAT32 ||
		    o->type == MSGPACK_OBJECT_FLOAT64) {
			double lr = o->via.f64;
			if (!isfinite(lr) || lr < 0)
				return ps_mpr_bad(d, "element 9 (lr): %g is not a "
					   "learning rate (finite, >= 0)", lr);
			h->has_lr = 1;
			h->lr = lr;
		} else if (o->type != MSGPACK_OBJECT_NIL) {
			return ps_mpr_bad(d, "element 9 (lr): expected a float");
		}
	}
	h->piece = 0;
	if (a->size > HEADER_FIELDS + 1 &&
	    a->ptr[HEADER_FIELDS + 1].type != MSGPACK_OBJECT_NIL) {
		uint64_t piece;
		rc = ps_mpr_uint(d, &a->ptr[HEADER_FIELDS + 1], "element 10 (piece)",
		              PS_MAX_PIECES - 1, &piece);
		if (rc != PS_OK)
			return rc;
		h->piece = (uint32_t)piece;
	}
	return PS_OK;
}

int ps_wire_header_decode(const void *buf, size_t len, ps_wire_header *h_p,
                          char *why, size_t whylen)
{
	msgpack_unpacked u;
	ps_wire_header h;
	ps_mpr d;
	int rc;

	if (!h_p)
		return PS_EINVAL;
	memset(h_p, 0, sizeof(*h_p));
	ps_mpr_init(&d, why, whylen, "header");
	/* before anything is decoded: a header is small, and decoding a
	 * large one would allocate in proportion to it */
	if (len > PS_WIRE_HEADER_MAX)
		return ps_mpr_bad(&d, "%zu bytes, more than a header's %d", len,
		           PS_WIRE_HEADER_MAX);
	rc = ps_mpr_unpack(buf, len, PS_WIRE_HEADER_MAX, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = header_walk(&d, &u.data, &h);
	msgpack_unpacked_destroy(&u);
	if (rc == PS_OK)
		*h_p = h;
	return rc;
}

/* ---- nodes and tensors -------------------------------------------------- */

/* What a decoder needs of a node: terminated strings, a known role. */
static int node_check(const ps_node_info *n)
{
	if (!memchr(n->host, '\0', PS_HOST_MAX) ||
	    !memchr(n->endpoint, '\0', PS_ENDPOINT_MAX)) {
		PS_ERROR("wire: node %u: host or endpoint not NUL-terminated",
		         n->id);
		return PS_EINVAL;
	}
	if (n->role > PS_ROLE_WORKER) {
		PS_ERROR("wire: node %u: unknown role %u", n->id, n->role);
		return PS_EINVAL;
	}
	return PS_OK;
}

static int node_pack(msgpack_packer *pk, const ps_node_info *n)
{
	int failed = 0;

	failed |= msgpack_pack_array(pk, 8);
	failed |= msgpack_pack_uint32(pk, n->id);
	failed |= msgpack_pack_uint32(pk, n->role);
	failed |= msgpack_pack_uint32(pk, n->rank);
	failed |= msgpack_pack_int32(pk, n->pid);
	failed |= msgpack_pack_uint64(pk, n->transport_id);
	failed |= pack_str(pk, n->host);
	failed |= pack_str(pk, n->endpoint);
	failed |= msgpack_pack_uint64(pk, n->kid);
	return failed;
}

static int node_walk(ps_mpr *d, const msgpack_object *o, ps_node_info *n)
{
	const msgpack_object_array *a = NULL;
	int rc;

	memset(n, 0, sizeof(*n));
	rc = ps_mpr_array(d, o, "node", 7, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[0], "id", &n->id);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[1], "role", &n->role);
	if (rc == PS_OK && n->role > PS_ROLE_WORKER)
		rc = ps_mpr_bad(d, "role %u is not a valid role (0..2)", n->role);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[2], "rank", &n->rank);
	if (rc == PS_OK)
		rc = ps_mpr_i32(d, &a->ptr[3], "pid", &n->pid);
	if (rc == PS_OK)
		rc = ps_mpr_uint(d, &a->ptr[4], "transport_id", UINT64_MAX,
		              &n->transport_id);
	if (rc == PS_OK)
		rc = ps_mpr_str(d, &a->ptr[5], "host", n->host, PS_HOST_MAX);
	if (rc == PS_OK)
		rc = ps_mpr_str(d, &a->ptr[6], "endpoint", n->endpoint,
		             PS_ENDPOINT_MAX);
	if (rc == PS_OK && a->size > 7)
		rc = ps_mpr_uint(d, &a->ptr[7], "kid", UINT64_MAX, &n->kid);
	return rc;
}

static int tensors_check(const ps_tensor_desc *t, uint32_t n)
{
	if (n > PS_MAX_TENSORS || (n > 0 && !t)) {
		PS_ERROR("wire: %u tensors (max %u)", n, PS_MAX_TENSORS);
		return PS_EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!memchr(t[i].name, '\0', PS_NAME_MAX)) {
			PS_ERROR("wire: tensor %u: name not NUL-terminated", i);
			return PS_EINVAL;
		}
		if (t[i].numel == 0 || t[i].numel > UINT64_MAX / PS_ELEM_SIZE) {
			PS_ERROR("wire: tensor %u (%s): %llu elements", i,
			         t[i].name, (unsigned long long)t[i].numel);
			return PS_EINVAL;
		}
	}
	return PS_OK;
}

static int tensors_pack(msgpack_packer *pk, const ps_tensor_desc *t, uint32_t n)
{
	int failed = msgpack_pack_array(pk, n);

	for (uint32_t i = 0; i < n && !failed; i++) {
		failed |= msgpack_pack_array(pk, 2);
		failed |= pack_str(pk, t[i].name);
		failed |= msgpack_pack_uint64(pk, t[i].numel);
	}
	return failed;
}

/* Decodes an array of tensors; *t_p is calloc'd (NULL when empty). */
static int tensors_walk(ps_mpr *d, const msgpack_object *o, const char *prefix,
                        ps_tensor_desc **t_p, uint32_t *n_p)
{
	const msgpack_object_array *a = NULL, *e = NULL;
	ps_tensor_desc *t = NULL;
	int rc;

	rc = ps_mpr_array(d, o, "tensors", 0, PS_MAX_TENSORS, &a);
	if (rc != PS_OK)
		return rc;
	if (a->size > 0) {
		t = calloc(a->size, sizeof(*t));
		if (!t) {
			ps_mpr_bad(d, "out of memory (%u tensors)", a->size);
			return PS_ENOMEM;
		}
	}
	for (uint32_t i = 0; i < a->size; i++) {
		ps_mpr_at(d, "%s: tensor %u", prefix, i);
		rc = ps_mpr_array(d, &a->ptr[i], "tensor", 2, UINT32_MAX, &e);
		if (rc == PS_OK)
			rc = ps_mpr_str(d, &e->ptr[0], "name", t[i].name,
			             PS_NAME_MAX);
		if (rc == PS_OK)
			rc = ps_mpr_uint(d, &e->ptr[1], "numel",
			              UINT64_MAX / PS_ELEM_SIZE, &t[i].numel);
		if (rc == PS_OK && t[i].numel == 0)
			rc = ps_mpr_bad(d, "numel is 0");
		if (rc != PS_OK) {
			free(t);
			return rc;
		}
	}
	ps_mpr_at(d, "%s", prefix);
	*t_p = t;
	*n_p = a->size;
	return PS_OK;
}

/* ---- REGISTER ----------------------------------------------------------- */

int ps_wire_register_encode(const ps_wire_register *r, void **buf_p,
                            size_t *len_p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int failed = 0;

	if (!r || !buf_p || !len_p)
		return PS_EINVAL;
	if (node_check(&r->self) != PS_OK ||
	    tensors_check(r->tensors, r->num_tensors) != PS_OK)
		return PS_EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	failed |= msgpack_pack_array(&pk, r->want_rank ? 3 : 2);
	failed |= node_pack(&pk, &r->self);
	failed |= tensors_pack(&pk, r->tensors, r->num_tensors);
	if (r->want_rank)
		failed |= msgpack_pack_uint32(&pk, r->want_rank);
	return sbuf_finish(&sb, failed, buf_p, len_p);
}

int ps_wire_register_decode(const void *buf, size_t len, ps_wire_register *r_p,
                            char *why, size_t whylen)
{
	const msgpack_object_array *a = NULL;
	ps_wire_register r;
	msgpack_unpacked u;
	ps_mpr d;
	int rc;

	if (!r_p)
		return PS_EINVAL;
	memset(r_p, 0, sizeof(*r_p));
	memset(&r, 0, sizeof(r));
	ps_mpr_init(&d, why, whylen, "register");
	rc = ps_mpr_unpack(buf, len, REGISTER_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_array(&d, &u.data, "the message", 2, UINT32_MAX, &a);
	if (rc == PS_OK) {
		ps_mpr_at(&d, "register: self");
		rc = node_walk(&d, &a->ptr[0], &r.self);
	}
	if (rc == PS_OK) {
		ps_mpr_at(&d, "register");
		rc = tensors_walk(&d, &a->ptr[1], "register", &r.tensors,
		                  &r.num_tensors);
	}
	if (rc == PS_OK && a->size > 2) {
		uint64_t want;
		rc = ps_mpr_uint(&d, &a->ptr[2], "register: element 2 (rank asked "
		              "for, plus 1)", PS_MAX_NODES, &want);
		r.want_rank = (uint32_t)want;
	}
	if (rc != PS_OK)
		free(r.tensors);
	msgpack_unpacked_destroy(&u);
	if (rc == PS_OK)
		*r_p = r;
	return rc;
}

void ps_wire_register_clear(ps_wire_register *r)
{
	if (!r)
		return;
	free(r->tensors);
	memset(r, 0, sizeof(*r));
}

/* ---- WELCOME ------------------------------------------------------------ */

/* Nodes indexed by id with the roles and ranks their ids imply. */
static int nodes_consistent(ps_mpr *d, const ps_wire_welcome *w)
{
	uint64_t expect = 1 + (uint64_t)w->num_servers + w->num_workers;

	if (w->num_nodes != expect)
		return ps_mpr_bad(d, "%u nodes, expected 1 + %u servers + %u workers",
		           w->num_nodes, w->num_servers, w->num_workers);
	if (w->your_id >= w->num_nodes)
		return ps_mpr_bad(d, "your_id %u is not a node (%u nodes)", w->your_id,
		           w->num_nodes);
	for (uint32_t i = 0; i < w->num_nodes; i++) {
		const ps_node_info *n = &w->nodes[i];
		uint32_t role = PS_ROLE_SCHEDULER, rank = 0;

		if (i > w->num_servers)
			role = PS_ROLE_WORKER, rank = i - 1 - w->num_servers;
		else if (i > 0)
			role = PS_ROLE_SERVER, rank = i - 1;
		if (n->id != i)
			return ps_mpr_bad(d, "node %u has id %u", i, n->id);
		if (n->role != role || n->rank != rank)
			return ps_mpr_bad(d, "node %u is %s %u, expected %s %u", i,
			           ps_role_name(n->role), n->rank,
			           ps_role_name(role), rank);
	}
	return PS_OK;
}

static int placement_pack(msgpack_packer *pk, const ps_placement *p)
{
	int failed = 0;

	if (!p)
		return msgpack_pack_nil(pk);
	failed |= msgpack_pack_array(pk, 3);
	failed |= msgpack_pack_uint64(pk, p->partition_size);
	failed |= tensors_pack(pk, p->tensors, p->num_tensors);
	failed |= msgpack_pack_array(pk, p->num_parts);
	for (uint32_t i = 0; i < p->num_parts && !failed; i++) {
		const ps_partition *q = &p->parts[i];

		failed |= msgpack_pack_array(pk, 6);
		failed |= msgpack_pack_uint32(pk, q->tensor);
		failed |= msgpack_pack_uint32(pk, q->index);
		failed |= msgpack_pack_uint64(pk, q->offset);
		failed |= msgpack_pack_uint64(pk, q->numel);
		failed |= msgpack_pack_uint32(pk, q->server);
		failed |= msgpack_pack_uint32(pk, q->ntensors);
	}
	return failed;
}

/* One of a WELCOME's priority arrays: nil when there is none. */
static int priorities_pack(msgpack_packer *pk, const ps_placement *pl,
                           const uint32_t *prio)
{
	int failed = 0;

	if (!prio || !pl)
		return msgpack_pack_nil(pk);
	failed |= msgpack_pack_array(pk, pl->num_tensors);
	for (uint32_t i = 0; i < pl->num_tensors; i++)
		failed |= msgpack_pack_uint32(pk, prio[i]);
	return failed;
}

int ps_wire_welcome_encode(const ps_wire_welcome *w, void **buf_p,
                           size_t *len_p)
{
	char why[256];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int failed = 0;
	ps_mpr d;

	if (!w || !buf_p || !len_p || (w->num_nodes > 0 && !w->nodes))
		return PS_EINVAL;
	ps_mpr_init(&d, why, sizeof(why), "welcome");
	if (w->num_nodes > PS_MAX_NODES || nodes_consistent(&d, w) != PS_OK) {
		PS_ERROR("wire: cannot encode: %s",
		         w->num_nodes > PS_MAX_NODES ? "too many nodes" : why);
		return PS_EINVAL;
	}
	for (uint32_t i = 0; i < w->num_nodes; i++)
		if (node_check(&w->nodes[i]) != PS_OK)
			return PS_EINVAL;
	if (w->placement) {
		const ps_placement *p = w->placement;

		if (p->num_servers != w->num_servers) {
			PS_ERROR("wire: cannot encode: placement on %u "
			         "servers, welcome names %u",
			         p->num_servers, w->num_servers);
			return PS_EINVAL;
		}
		if (tensors_check(p->tensors, p->num_tensors) != PS_OK ||
		    p->num_parts > PS_MAX_PARTS)
			return PS_EINVAL;
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	int with_prio = w->priority && w->placement;
	int with_start = w->start_iteration > 0;
	int with_push = w->placement != NULL;
	int with_sizes = w->has_sizes && w->placement;

	failed |= msgpack_pack_array(&pk, with_sizes   ? 9
					  : with_push  ? 8
					  : with_start ? 7
					  : with_prio  ? 6
						       : 5);
	failed |= msgpack_pack_uint32(&pk, w->your_id);
	failed |= msgpack_pack_uint32(&pk, w->num_servers);
	failed |= msgpack_pack_uint32(&pk, w->num_workers);
	failed |= msgpack_pack_array(&pk, w->num_nodes);
	for (uint32_t i = 0; i < w->num_nodes && !failed; i++)
		failed |= node_pack(&pk, &w->nodes[i]);
	if (!failed)
		failed |= placement_pack(&pk, w->placement);
	if (!failed && (with_prio || with_start || with_push))
		failed |= priorities_pack(&pk, w->placement, w->priority);
	if (!failed && (with_start || with_push))
		failed |= msgpack_pack_uint64(&pk, w->start_iteration);
	if (!failed && with_push)
		failed |= priorities_pack(&pk, w->placement, w->push_priority);
	if (!failed && with_sizes) {
		failed |= msgpack_pack_array(&pk, 4);
		failed |= msgpack_pack_uint64(&pk, w->push_credit);
		failed |= msgpack_pack_uint64(&pk, w->params_credit);
		failed |= msgpack_pack_uint64(&pk, w->push_partition);
		failed |= msgpack_pack_uint64(&pk, w->params_partition);
	}
	return sbuf_finish(&sb, failed, buf_p, len_p);
}

static int part_walk(ps_mpr *d, const msgpack_object *o, ps_partition *q)
{
	const msgpack_object_array *a = NULL;
	int rc;

	rc = ps_mpr_array(d, o, "part", 5, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[0], "tensor", &q->tensor);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[1], "index", &q->index);
	if (rc == PS_OK)
		rc = ps_mpr_uint(d, &a->ptr[2], "offset", UINT64_MAX, &q->offset);
	if (rc == PS_OK)
		rc = ps_mpr_uint(d, &a->ptr[3], "numel", UINT64_MAX, &q->numel);
	if (rc == PS_OK)
		rc = ps_mpr_u32(d, &a->ptr[4], "server", &q->server);
	q->ntensors = 1; /* absent before fusion existed */
	if (rc == PS_OK && a->size > 5)
		rc = ps_mpr_u32(d, &a->ptr[5], "ntensors", &q->ntensors);
	return rc;
}

static int placement_walk(ps_mpr *d, const msgpack_object *o, uint32_t servers,
                          ps_placement **p_p)
{
	const msgpack_object_array *a = NULL;
	ps_tensor_desc *tensors = NULL;
	ps_partition *parts = NULL;
	const msgpack_object_array *pa = NULL;
	uint64_t partition_size = 0;
	char why[PS_REASON_MAX];
	uint32_t n = 0;
	int rc;

	*p_p = NULL;
	ps_mpr_at(d, "welcome: placement");
	rc = ps_mpr_array(d, o, "placement", 3, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_uint(d, &a->ptr[0], "partition_size", UINT64_MAX,
		              &partition_size);
	if (rc == PS_OK)
		rc = tensors_walk(d, &a->ptr[1], "welcome: placement", &tensors,
		                  &n);
	if (rc == PS_OK)
		rc = ps_mpr_array(d, &a->ptr[2], "parts", 0, PS_MAX_PARTS, &pa);
	if (rc != PS_OK)
		goto out_tensors;
	if (pa->size > 0) {
		parts = calloc(pa->size, sizeof(*parts));
		if (!parts) {
			rc = PS_ENOMEM;
			ps_mpr_bad(d, "out of memory (%u parts)", pa->size);
			goto out_tensors;
		}
	}
	for (uint32_t i = 0; i < pa->size; i++) {
		ps_mpr_at(d, "welcome: placement: part %u", i);
		rc = part_walk(d, &pa->ptr[i], &parts[i]);
		if (rc != PS_OK)
			goto out_parts;
	}
	ps_mpr_at(d, "welcome");
	rc = ps_placement_from_parts(tensors, n, parts, pa->size, servers,
	                             partition_size, p_p, why, sizeof(why));
	if (rc == PS_EPROTO)
		ps_mpr_bad(d, "%s", why);
	else if (rc != PS_OK)
		ps_mpr_bad(d, "placement: %s", ps_strerror(rc));
out_parts:
	free(parts);
out_tensors:
	free(tensors);
	return rc;
}

/* The optional priorities of a WELCOME: exactly n uint32. */
static int priorities_walk(ps_mpr *d, const msgpack_object *o, uint32_t n,
                           uint32_t **prio_p)
{
	const msgpack_object_array *pa = NULL;
	uint32_t *prio;
	int rc;

	ps_mpr_at(d, "welcome: priorities");
	rc = ps_mpr_array(d, o, "priorities", n, n, &pa);
	if (rc != PS_OK)
		return rc;
	prio = calloc(n ? n : 1, sizeof(*prio));
	if (!prio)
		return ps_mpr_bad(d, "out of memory (%u priorities)", n);
	for (uint32_t i = 0; i < n && rc == PS_OK; i++)
		rc = ps_mpr_u32(d, &pa->ptr[i], "priority", &prio[i]);
	if (rc != PS_OK) {
		free(prio);
		return rc;
	}
	*prio_p = prio;
	return PS_OK;
}

int ps_wire_welcome_decode(const void *buf, size_t len, ps_wire_welcome *w_p,
                           char *why, size_t whylen)
{
	const msgpack_object_array *a, *na;
	ps_wire_welcome w;
	msgpack_unpacked u;
	ps_mpr d;
	int rc;

	if (!w_p)
		return PS_EINVAL;
	memset(w_p, 0, sizeof(*w_p));
	memset(&w, 0, sizeof(w));
	ps_mpr_init(&d, why, whylen, "welcome");
	rc = ps_mpr_unpack(buf, len, WELCOME_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_array(&d, &u.data, "the message", 5, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_u32(&d, &a->ptr[0], "your_id", &w.your_id);
	if (rc == PS_OK)
		rc = ps_mpr_u32(&d, &a->ptr[1], "num_servers", &w.num_servers);
	if (rc == PS_OK && w.num_servers > PS_MAX_SERVERS)
		rc = ps_mpr_bad(&d, "num_servers = %u (max %u)", w.num_servers,
		         PS_MAX_SERVERS);
	if (rc == PS_OK)
		rc = ps_mpr_u32(&d, &a->ptr[2], "num_workers", &w.num_workers);
	if (rc == PS_OK && w.num_workers > PS_MAX_NODES)
		rc = ps_mpr_bad(&d, "num_workers = %u (max %u)", w.num_workers,
		         PS_MAX_NODES);
	if (rc == PS_OK)
		rc = ps_mpr_array(&d, &a->ptr[3], "nodes", 0, PS_MAX_NODES, &na);
	if (rc != PS_OK)
		goto out;
	if (na->size > 0) {
		w.nodes = calloc(na->size, sizeof(*w.nodes));
		if (!w.nodes) {
			rc = PS_ENOMEM;
			ps_mpr_bad(&d, "out of memory (%u nodes)", na->size);
			goto out;
		}
	}
	w.num_nodes = na->size;
	for (uint32_t i = 0; i < na->size && rc == PS_OK; i++) {
		ps_mpr_at(&d, "welcome: node %u", i);
		rc = node_walk(&d, &na->ptr[i], &w.nodes[i]);
	}
	ps_mpr_at(&d, "welcome");
	if (rc == PS_OK)
		rc = nodes_consistent(&d, &w);
	if (rc == PS_OK && a->ptr[4].type != MSGPACK_OBJECT_NIL)
		rc =
		    placement_walk(&d, &a->ptr[4], w.num_servers, &w.placement);
	if (rc == PS_OK && a->size >= 6 && w.placement &&
	    a->ptr[5].type != MSGPACK_OBJECT_NIL)
		rc = priorities_walk(&d, &a->ptr[5], w.placement->num_tensors,
		                     &w.priority);
	if (rc == PS_OK && a->size >= 7)
		rc = ps_mpr_uint(&d, &a->ptr[6], "start_iteration", UINT64_MAX,
		              &w.start_iteration);
	if (rc == PS_OK && a->size >= 8 && w.placement &&
	    a->ptr[7].type != MSGPACK_OBJECT_NIL)
		rc = priorities_walk(&d, &a->ptr[7], w.placement->num_tensors,
		                     &w.push_priority);
	if (rc == PS_OK && a->size >= 9 &&
	    a->ptr[8].type != MSGPACK_OBJECT_NIL) {
		const msgpack_object_array *ca;
		/* the sizes go with a placement (the encoder writes them
		 * only then): without one they would be taken, and lost in
		 * a round trip */
		rc = w.placement ? ps_mpr_array(&d, &a->ptr[8], "sizes", 4, 4,
						&ca)
				 : ps_mpr_bad(&d, "sizes without a placement");
		if (rc == PS_OK)
			rc = ps_mpr_uint(&d, &ca->ptr[0], "push credit",
			              PS_WIRE_SIZE_MAX, &w.push_credit);
		if (rc == PS_OK)
			rc = ps_mpr_uint(&d, &ca->ptr[1], "params credit",
			              PS_WIRE_SIZE_MAX, &w.params_credit);
		if (rc == PS_OK)
			rc = ps_mpr_uint(&d, &ca->ptr[2], "push partition size",
			              PS_WIRE_SIZE_MAX, &w.push_partition);
		if (rc == PS_OK)
			rc = ps_mpr_uint(&d, &ca->ptr[3], "params partition size",
			              PS_WIRE_SIZE_MAX, &w.params_partition);
		if (rc == PS_OK &&
		    (w.push_partition < PS_ELEM_SIZE ||
		     w.params_partition < PS_ELEM_SIZE))
			rc = ps_mpr_bad(&d, "sizes: a partition size below %d bytes",
			         PS_ELEM_SIZE);
		w.has_sizes = rc == PS_OK;
	}
	if (rc == PS_OK && a->size < 8 && w.priority) {
		/* one order for both directions */
		size_t n = w.placement->num_tensors * sizeof(*w.priority);
		w.push_priority = malloc(n ? n : 1);
		if (!w.push_priority)
			rc = ps_mpr_bad(&d, "out of memory (%u priorities)",
			         w.placement->num_tensors);
		else
			memcpy(w.push_priority, w.priority, n);
	}
out:
	msgpack_unpacked_destroy(&u);
	if (rc != PS_OK) {
		ps_wire_welcome_clear(&w);
		return rc;
	}
	*w_p = w;
	return PS_OK;
}

void ps_wire_welcome_sizes(const ps_wire_welcome *w, ps_config *cfg)
{
	if (!w->has_sizes)
		return;
	cfg->scheduling.push.credit_size = w->push_credit;
	cfg->scheduling.params.credit_size = w->params_credit;
	ps_config_set_partition_sizes(cfg, w->push_partition,
				      w->params_partition);
}

void ps_wire_welcome_clear(ps_wire_welcome *w)
{
	if (!w)
		return;
	free(w->nodes);
	free(w->priority);
	free(w->push_priority);
	ps_placement_free(&w->placement);
	memset(w, 0, sizeof(*w));
}

/* ---- TIMINGS ------------------------------------------------------------ */

#define TIMINGS_OBJECTS (1 + 4 + SLACK_OBJECTS)

int ps_wire_timings_encode(const ps_timings *t, void **buf_p, size_t *len_p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t bytes = (size_t)t->ntensors * sizeof(float);
	int failed = 0;

	if (!t || !buf_p || !len_p)
		return PS_EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	failed |= msgpack_pack_array(&pk, 4);
	failed |= msgpack_pack_uint32(&pk, t->iterations);
	failed |= msgpack_pack_double(&pk, t->length_us);
	failed |= msgpack_pack_bin(&pk, bytes);
	failed |= msgpack_pack_bin_body(&pk, t->need_us, bytes);
	failed |= msgpack_pack_bin(&pk, bytes);
	failed |= msgpack_pack_bin_body(&pk, t->push_us, bytes);
	return sbuf_finish(&sb, failed, buf_p, len_p);
}

/* A bin of exactly n float32s into dst. */
static int float_bin(ps_mpr *d, const msgpack_object *o, const char *name,
		     uint32_t n, float *dst)
{
	if (o->type != MSGPACK_OBJECT_BIN)
		return ps_mpr_bad(d, "%s is not bin (got %s)", name,
				  ps_mpr_kind_name(o->type));
	if (o->via.bin.size != (uint64_t)n * sizeof(float))
		return ps_mpr_bad(d, "%s has %u bytes, not %u tensors' %llu",
				  name, o->via.bin.size, n,
				  (unsigned long long)n * sizeof(float));
	memcpy(dst, o->via.bin.ptr, o->via.bin.size);
	return PS_OK;
}

int ps_wire_timings_decode(const void *buf, size_t len, ps_timings *t,
			   char *why, size_t whylen)
{
	const msgpack_object_array *a = NULL;
	msgpack_unpacked u;
	ps_mpr d;
	uint32_t iterations = 0;
	int rc;

	if (!t)
		return PS_EINVAL;
	ps_mpr_init(&d, why, whylen, "timings");
	rc = ps_mpr_unpack(buf, len, TIMINGS_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_array(&d, &u.data, "the message", 4, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_u32(&d, &a->ptr[0], "iterations", &iterations);
	if (rc == PS_OK)
		rc = ps_mpr_f64(&d, &a->ptr[1], "length_us", &t->length_us);
	if (rc == PS_OK)
		rc = float_bin(&d, &a->ptr[2], "need", t->ntensors, t->need_us);
	if (rc == PS_OK)
		rc = float_bin(&d, &a->ptr[3], "push", t->ntensors, t->push_us);
	msgpack_unpacked_destroy(&u);
	t->iterations = iterations;
	t->workers = 1;
	if (rc == PS_OK && ps_timings_check(t, why, whylen) != PS_OK)
		rc = PS_EPROTO;
	return rc;
}

/* ---- DONE --------------------------------------------------------------- */

int ps_wire_done_encode(const ps_wire_done *dn, void **buf_p, size_t *len_p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int failed = 0;

	if (!dn || !buf_p || !len_p)
		return PS_EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	failed |= msgpack_pack_array(&pk, 9);
	failed |= msgpack_pack_uint64(&pk, dn->iterations);
	failed |= msgpack_pack_double(&pk, dn->seconds);
	failed |= msgpack_pack_uint64(&pk, dn->bytes_pushed);
	failed |= msgpack_pack_uint64(&pk, dn->bytes_received);
	failed |= msgpack_pack_double(&pk, dn->last_loss);
	failed |= msgpack_pack_double(&pk, dn->wait_seconds);
	failed |= msgpack_pack_double(&pk, dn->efficiency);
	failed |= msgpack_pack_double(&pk, dn->speedup_bound);
	failed |= msgpack_pack_double(&pk, dn->samples_per_second);
	return sbuf_finish(&sb, failed, buf_p, len_p);
}

int ps_wire_done_decode(const void *buf, size_t len, ps_wire_done *d_p,
                        char *why, size_t whylen)
{
	const msgpack_object_array *a = NULL;
	ps_wire_done dn = {0};
	msgpack_unpacked u;
	ps_mpr d;
	int rc;

	if (!d_p)
		return PS_EINVAL;
	memset(d_p, 0, sizeof(*d_p));
	ps_mpr_init(&d, why, whylen, "done");
	rc = ps_mpr_unpack(buf, len, DONE_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_array(&d, &u.data, "the message", 5, UINT32_MAX, &a);
	if (rc == PS_OK)
		rc = ps_mpr_uint(&d, &a->ptr[0], "iterations", UINT64_MAX,
		              &dn.iterations);
	if (rc == PS_OK)
		rc = ps_mpr_f64(&d, &a->ptr[1], "seconds", &dn.seconds);
	if (rc == PS_OK)
		rc = ps_mpr_uint(&d, &a->ptr[2], "bytes_pushed", UINT64_MAX,
		              &dn.bytes_pushed);
	if (rc == PS_OK)
		rc = ps_mpr_uint(&d, &a->ptr[3], "bytes_received", UINT64_MAX,
		              &dn.bytes_received);
	if (rc == PS_OK)
		rc = ps_mpr_f64(&d, &a->ptr[4], "last_loss", &dn.last_loss);
	/* the replay metrics, since the model replay; absent = 0 */
	if (rc == PS_OK && a->size >= 9)
		rc = ps_mpr_f64(&d, &a->ptr[5], "wait_seconds", &dn.wait_seconds);
	if (rc == PS_OK && a->size >= 9)
		rc = ps_mpr_f64(&d, &a->ptr[6], "efficiency", &dn.efficiency);
	if (rc == PS_OK && a->size >= 9)
		rc = ps_mpr_f64(&d, &a->ptr[7], "speedup_bound",
		             &dn.speedup_bound);
	if (rc == PS_OK && a->size >= 9)
		rc = ps_mpr_f64(&d, &a->ptr[8], "samples_per_second",
		             &dn.samples_per_second);
	msgpack_unpacked_destroy(&u);
	if (rc == PS_OK)
		*d_p = dn;
	return rc;
}

/* ---- one integer (CREDIT) ----------------------------------------------- */

int ps_wire_u64_encode(uint64_t value, void **buf_p, size_t *len_p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	if (!buf_p || !len_p)
		return PS_EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	return sbuf_finish(&sb, msgpack_pack_uint64(&pk, value), buf_p, len_p);
}

int ps_wire_u64_decode(const void *buf, size_t len, uint64_t *value_p,
                       char *why, size_t whylen)
{
	msgpack_unpacked u;
	ps_mpr d;
	int rc;

	if (!value_p)
		return PS_EINVAL;
	ps_mpr_init(&d, why, whylen, "integer body");
	rc = ps_mpr_unpack(buf, len, SCALAR_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_uint(&d, &u.data, "the value", UINT64_MAX, value_p);
	msgpack_unpacked_destroy(&u);
	return rc;
}

int ps_wire_credit_decode(const ps_wire_header *h, const void *buf,
                          size_t len, uint64_t configured, uint64_t *credit_p,
                          char *why, size_t whylen)
{
	if (h->sender != 0) {
		snprintf(why, whylen, "CREDIT from node %u", h->sender);
		return PS_EPROTO;
	}
	if (ps_wire_u64_decode(buf, len, credit_p, why, whylen) != PS_OK)
		return PS_EPROTO;
	if (*credit_p == 0 || configured == 0) {
		snprintf(why, whylen, "CREDIT %llu: a live change needs a "
		         "window before and after",
		         (unsigned long long)*credit_p);
		return PS_EPROTO;
	}
	return PS_OK;
}

/* ---- ABORT reason ------------------------------------------------------- */

int ps_wire_reason_encode(const char *reason, void **buf_p, size_t *len_p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t n;

	if (!reason || !buf_p || !len_p)
		return PS_EINVAL;
	/* An abort must go out: longer reasons are cut, not refused. */
	n = strnlen(reason, PS_REASON_MAX - 1);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	return sbuf_finish(&sb, msgpack_pack_str_with_body(&pk, reason, n),
	                   buf_p, len_p);
}

int ps_wire_reason_decode(const void *buf, size_t len, char *reason, size_t cap,
                          char *why, size_t whylen)
{
	char text[PS_REASON_MAX];
	msgpack_unpacked u;
	ps_mpr d;
	int rc;

	if (!reason || cap == 0)
		return PS_EINVAL;
	reason[0] = '\0';
	ps_mpr_init(&d, why, whylen, "abort reason");
	rc = ps_mpr_unpack(buf, len, SCALAR_OBJECTS, &u, &d);
	if (rc != PS_OK)
		return rc;
	rc = ps_mpr_str(&d, &u.data, "the message", text, sizeof(text));
	msgpack_unpacked_destroy(&u);
	if (rc == PS_OK)
		snprintf(reason, cap, "%s", text); /* cut to the caller's cap */
	return rc;
}
