/*
 * proto/msgpack_reader.h - a checked reader of msgpack messages that do not
 * trust their bytes: the decoders of proto/wire.c are written on it.
 *
 * ps_mpr_unpack first walks the encoding without building anything (a
 * prescan): the buffer must hold exactly one msgpack object, no array or
 * map may claim more elements than bytes remain (every element takes at
 * least one byte), nesting is at most 16 deep, and the message may hold no
 * more objects in all than the caller's bound for its kind. Only then does
 * msgpack_unpack_next build the object tree: msgpack-c allocates an
 * array's element slots (one msgpack_object, 24 bytes, each; a map's 48
 * per pair) as soon as it reads the count, so what it allocates is bounded
 * by 24 bytes times the smaller of the buffer's length and that bound.
 * The ps_mpr_* accessors then read the tree with every type, range, string
 * length and count checked; strings may not contain NUL bytes.
 *
 * A failure returns PS_EPROTO (PS_ENOMEM where msgpack-c ran out) and
 * writes into the reader's why "WHERE: WHAT" ("header: element 3 (sender)
 * is not an unsigned integer (got a negative integer)"), WHERE being what
 * ps_mpr_init or the last ps_mpr_at said. Nothing here logs.
 *
 * Threads: a reader is used by one thread.
 */
#ifndef ORDO_PROTO_MSGPACK_READER_H
#define ORDO_PROTO_MSGPACK_READER_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ps_mpr {
	char *why;
	size_t whylen;
	char where[96]; /* "welcome: node 3" */
} ps_mpr;

/* A reader writing its reasons into why[whylen] (cleared), at `where`. */
void ps_mpr_init(ps_mpr *d, char *why, size_t whylen, const char *where);
/* Says where the next reasons are ("welcome: node 3"). */
void ps_mpr_at(ps_mpr *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Writes "WHERE: WHAT" into the reader's why; returns PS_EPROTO. */
int ps_mpr_bad(ps_mpr *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prescans buf (at most max_objects objects), then unpacks it into u
 * (msgpack_unpacked_destroy it after a PS_OK). */
int ps_mpr_unpack(const void *buf, size_t len, uint64_t max_objects,
		  msgpack_unpacked *u, ps_mpr *d);

/* "an unsigned integer", "a string", ...: a type as reasons name it. */
const char *ps_mpr_kind_name(msgpack_object_type t);

/* Typed reads of o, named `name` in reasons. */
int ps_mpr_uint(ps_mpr *d, const msgpack_object *o, const char *name,
		uint64_t max, uint64_t *v_p);
int ps_mpr_u32(ps_mpr *d, const msgpack_object *o, const char *name,
	       uint32_t *v_p);
int ps_mpr_i32(ps_mpr *d, const msgpack_object *o, const char *name,
	       int32_t *v_p);
int ps_mpr_f64(ps_mpr *d, const msgpack_object *o, const char *name,
	       double *v_p);
/* A str of fewer than cap bytes, without NUL bytes, copied into dst. */
int ps_mpr_str(ps_mpr *d, const msgpack_object *o, const char *name,
	       char *dst, size_t cap);
/* An array of min..max elements. */
int ps_mpr_array(ps_mpr *d, const msgpack_object *o, const char *name,
		 uint32_t min, uint32_t max, const msgpack_object_array **a_p);

#endif /* ORDO_PROTO_MSGPACK_READER_H */
