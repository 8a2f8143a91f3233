/*
 * ordo/error.h - the one error enum of ordo.
 *
 * Every ordo function that can fail returns an int that is PS_OK (0) or one
 * of the codes below. errno, ZeroMQ and verbs codes are converted at the
 * boundary where they are first seen; the function that first detects an
 * error logs it, callers pass the code on.
 *
 * Threads: ps_strerror() is thread-safe (returns static strings).
 */
#ifndef ORDO_ERROR_H
#define ORDO_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ps_err {
	PS_OK = 0,
	PS_EINVAL,       /* invalid argument or value */
	PS_ENOMEM,       /* out of memory */
	PS_ETIMEDOUT,    /* an operation did not complete in time */
	PS_ECLOSED,      /* the object was closed; pending work fails with this */
	PS_EPROTO,       /* malformed or unexpected message */
	PS_ENOTSUP,      /* operation not supported (by this transport, mode) */
	PS_ECONNREFUSED, /* peer refused or unreachable */
	PS_EADDRINUSE,   /* address (port) already in use */
	PS_EABORTED,     /* the job was aborted (a node failed) */
	PS_EIO,          /* I/O error (file, socket) */
	PS_ECONFIG,      /* configuration error */
	PS_EAGAIN,       /* try again: woken up before anything happened */
	PS_ENOENT,       /* no such file, key or entry */
	PS_ESTATE,       /* call not valid in the object's current state */
	PS_EINTR,        /* interrupted by a signal (SIGINT/SIGTERM) */
	PS_ERR_COUNT
} ps_err;

/* A short, static, human-readable description of err ("timed out"). */
const char *ps_strerror(int err);

/* Converts an errno value into the closest ps_err. */
int ps_err_from_errno(int errnum);

#ifdef __cplusplus
}
#endif
#endif /* ORDO_ERROR_H */
