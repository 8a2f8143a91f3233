/*
 * proto/msgpack_reader.c - the checked msgpack reader (msgpack_reader.h):
 * a prescan that bounds what msgpack-c may allocate, then typed access to
 * the object tree with every type, range and size checked.
 */
#include "proto/msgpack_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ordo/error.h"

void ps_mpr_init(ps_mpr *d, char *why, size_t whylen, const char *where)
{
	d->why = why;
	d->whylen = whylen;
	snprintf(d->where, sizeof(d->where), "%s", where);
	if (why && whylen > 0)
		why[0] = '\0';
}

void ps_mpr_at(ps_mpr *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->where, sizeof(d->where), fmt, ap);
	va_end(ap);
}

int ps_mpr_bad(ps_mpr *d, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	if (!d->why || d->whylen == 0)
		return PS_EPROTO;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(d->why, d->whylen, "%s: %s", d->where, msg);
	return PS_EPROTO;
}

/* ---- prescan: one object, counts backed by bytes ------------------------ */

#define MAX_DEPTH 16 /* our layouts nest 4 deep */

static uint64_t be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static int prescan(const uint8_t *p, size_t len, uint64_t max_objects,
		   ps_mpr *d)
{
	uint64_t left[MAX_DEPTH + 1]; /* objects still to read, per level */
	uint64_t pending = 1;         /* their sum */
	uint64_t seen = 0;            /* objects read so far */
	size_t off = 0;
	int top = 0;

	left[0] = 1;
	while (pending > 0) {
		uint64_t skip = 0, children = 0, extra = 0;
		size_t lenbytes = 0;
		int kind = 0; /* 0 skip, 1 array, 2 map */
		uint8_t b;

		while (left[top] == 0)
			top--;
		left[top]--;
		if (off >= len)
			return ps_mpr_bad(d, "truncated after %zu bytes", len);
		b = p[off++];
		pending--;
		seen++;
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 ||
		    b == 0xc3) {
			/* fixint, nil, bool */
		} else if (b <= 0x8f) {
			children = 2u * (b & 0x0fu), kind = 2;
		} else if (b <= 0x9f) {
			children = b & 0x0fu, kind = 1;
		} else if (b <= 0xbf) {
			skip = b & 0x1fu;
		} else {
			switch (b) {
			case 0xc4: /* bin 8/16/32 */
			case 0xd9: /* str 8/16/32 */
				lenbytes = 1;
				break;
			case 0xc5:
			case 0xda:
				lenbytes = 2;
				break;
			case 0xc6:
			case 0xdb:
				lenbytes = 4;
				break;
			case 0xc7: /* ext 8/16/32: length, type, data */
				lenbytes = 1, extra = 1;
				break;
			case 0xc8:
				lenbytes = 2, extra = 1;
				break;
			case 0xc9:
				lenbytes = 4, extra = 1;
				break;
			case 0xca:
				skip = 4;
				break;
			case 0xcb:
				skip = 8;
				break;
			case 0xcc:
			case 0xd0:
				skip = 1;
				break;
			case 0xcd:
			case 0xd1:
				skip = 2;
				break;
			case 0xce:
			case 0xd2:
				skip = 4;
				break;
			case 0xcf:
			case 0xd3:
				skip = 8;
				break;
			case 0xd4: /* fixext 1/2/4/8/16 */
				skip = 2;
				break;
			case 0xd5:
				skip = 3;
				break;
			case 0xd6:
				skip = 5;
				break;
			case 0xd7:
				skip = 9;
				break;
			case 0xd8:
				skip = 17;
				break;
			case 0xdc:
				lenbytes = 2, kind = 1;
				break;
			case 0xdd:
				lenbytes = 4, kind = 1;
				break;
			case 0xde:
				lenbytes = 2, kind = 2;
				break;
			case 0xdf:
				lenbytes = 4, kind = 2;
				break;
			default: /* 0xc1: never used */
				return ps_mpr_bad(d,
				           "invalid msgpack byte 0x%02x at "
				           "offset %zu",
				           b, off - 1);
			}
		}
		if (lenbytes) {
			uint64_t n;

			if (len - off < lenbytes)
				return ps_mpr_bad(d, "truncated after %zu bytes", len);
			n = be(p + off, lenbytes);
			off += lenbytes;
			if (kind == 1)
				children = n;
			else if (kind == 2)
				children = 2 * n;
			else
				skip = n + extra;
		}
		if (skip > len - off)
			return ps_mpr_bad(d,
			           "truncated: %llu bytes claimed at offset "
			           "%zu, %zu remain",
			           (unsigned long long)skip, off, len - off);
		off += skip;
		/* every pending object takes at least one more byte */
		if (pending + children > len - off) {
			if (children == 0)
				return ps_mpr_bad(d, "truncated after %zu bytes", len);
			return ps_mpr_bad(d,
			           "%s at offset %zu claims %llu elements, "
			           "only %zu bytes remain",
			           kind == 2 ? "a map" : "an array", off,
			           (unsigned long long)children, len - off);
		}
		/* before msgpack-c would allocate the slots */
		if (children > max_objects - seen - pending)
			return ps_mpr_bad(d,
			           "%s at offset %zu claims %llu elements: "
			           "more than the %llu objects in all this "
			           "message can hold",
			           kind == 2 ? "a map" : "an array", off,
			           (unsigned long long)children,
			           (unsigned long long)max_objects);
		if (children > 0) {
			/* msgpack-c fails with "no memory" past its own
			 * limit (32); ours is well below it */
			if (top == MAX_DEPTH)
				return ps_mpr_bad(d, "nested deeper than %d levels",
				           MAX_DEPTH);
			left[++top] = children;
		}
		pending += children;
	}
	if (off < len)
		return ps_mpr_bad(d, "%zu trailing bytes after the message",
		           len - off);
	return PS_OK;
}

/* Checks buf with prescan (at most max_objects objects), then unpacks it
 * into u (destroy it after). */
int ps_mpr_unpack(const void *buf, size_t len, uint64_t max_objects,
		      msgpack_unpacked *u, ps_mpr *d)
{
	msgpack_unpack_return ret;
	size_t off = 0;
	int rc;

	if (!buf || len == 0)
		return ps_mpr_bad(d, "empty message");
	rc = prescan(buf, len, max_objects, d);
	if (rc != PS_OK)
		return rc;
	msgpack_unpacked_init(u);
	ret = msgpack_unpack_next(u, buf, len, &off);
	if (ret == MSGPACK_UNPACK_SUCCESS && off == len)
		return PS_OK;
	msgpack_unpacked_destroy(u);
	if (ret == MSGPACK_UNPACK_NOMEM_ERROR) {
		ps_mpr_bad(d, "out of memory");
		return PS_ENOMEM;
	}
	if (ret == MSGPACK_UNPACK_SUCCESS)
		return ps_mpr_bad(d, "%zu trailing bytes after the message",
		           len - off);
	return ps_mpr_bad(d, "malformed msgpack");
}

/* ---- typed access to msgpack objects ------------------------------------ */

const char *ps_mpr_kind_name(msgpack_object_type t)
{
	switch (t) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return "an unsigned integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "a negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float";
	case MSGPACK_OBJECT_STR:
		return "a string";
	case MSGPACK_OBJECT_ARRAY:
		return "an array";
	case MSGPACK_OBJECT_MAP:
		return "a map";
	case MSGPACK_OBJECT_BIN:
		return "binary data";
	case MSGPACK_OBJECT_EXT:
		return "an extension";
	}
	return "unknown";
}

int ps_mpr_uint(ps_mpr *d, const msgpack_object *o, const char *name,
                    uint64_t max, uint64_t *v_p)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return ps_mpr_bad(d, "%s is not an unsigned integer (got %s)", name,
		           ps_mpr_kind_name(o->type));
	if (o->via.u64 > max)
		return ps_mpr_bad(d, "%s = %llu is out of range (max %llu)", name,
		           (unsigned long long)o->via.u64,
		           (unsigned long long)max);
	*v_p = o->via.u64;
	return PS_OK;
}

int ps_mpr_u32(ps_mpr *d, const msgpack_object *o, const char *name,
                   uint32_t *v_p)
{
	uint64_t v = 0;
	int rc = ps_mpr_uint(d, o, name, UINT32_MAX, &v);

	if (rc == PS_OK)
		*v_p = (uint32_t)v;
	return rc;
}

int ps_mpr_i32(ps_mpr *d, const msgpack_object *o, const char *name,
                   int32_t *v_p)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > INT32_MAX)
			return ps_mpr_bad(d, "%s = %llu is out of range (max %d)",
			           name, (unsigned long long)o->via.u64,
			           INT32_MAX);
		*v_p = (int32_t)o->via.u64;
		return PS_OK;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		if (o->via.i64 < INT32_MIN)
			return ps_mpr_bad(d, "%s = %lld is out of range (min %d)",
			           name, (long long)o->via.i64, INT32_MIN);
		*v_p = (int32_t)o->via.i64;
		return PS_OK;
	}
	return ps_mpr_bad(d, "%s is not an integer (got %s)", name,
	           ps_mpr_kind_name(o->type));
}

int ps_mpr_f64(ps_mpr *d, const msgpack_object *o, const char *name,
                   double *v_p)
{
	if (o->type != MSGPACK_OBJECT_FLOAT32 &&
	    o->type != MSGPACK_OBJECT_FLOAT64)
		return ps_mpr_bad(d, "%s is not a float (got %s)", name,
		           ps_mpr_kind_name(o->type));
	*v_p = o->via.f64;
	return PS_OK;
}

/* Copies a str of fewer than cap bytes, without NUL bytes, into dst. */
int ps_mpr_str(ps_mpr *d, const msgpack_object *o, const char *name,
                   char *dst, size_t cap)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return ps_mpr_bad(d, "%s is not a string (got %s)", name,
		           ps_mpr_kind_name(o->type));
	if (o->via.str.size >= cap)
		return ps_mpr_bad(d, "%s is %u bytes long (max %zu)", name,
		           o->via.str.size, cap - 1);
	if (o->via.str.size > 0 &&
	    memchr(o->via.str.ptr, '\0', o->via.str.size))
		return ps_mpr_bad(d, "%s contains a NUL byte", name);
	if (o->via.str.size > 0)
		memcpy(dst, o->via.str.ptr, o->via.str.size);
	dst[o->via.str.size] = '\0';
	return PS_OK;
}

/* An array of min..max elements. */
int ps_mpr_array(ps_mpr *d, const msgpack_object *o, const char *name,
                     uint32_t min, uint32_t max,
                     const msgpack_object_array **a_p)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return ps_mpr_bad(d, "%s is not an array (got %s)", name,
		           ps_mpr_kind_name(o->type));
	if (o->via.array.size < min)
		return ps_mpr_bad(d, "%s has %u elements, expected at least %u", name,
		           o->via.array.size, min);
	if (o->via.array.size > max)
		return ps_mpr_bad(d, "%s has %u elements, at most %u allowed", name,
		           o->via.array.size, max);
	*a_p = &o->via.array;
	return PS_OK;
}

