/*
 * common/error.c - ps_strerror() and the errno boundary conversion.
 */
#include <errno.h>

#include "ordo/error.h"

static const char *const messages[PS_ERR_COUNT] = {
	[PS_OK] = "success",
	[PS_EINVAL] = "invalid argument",
	[PS_ENOMEM] = "out of memory",
	[PS_ETIMEDOUT] = "timed out",
	[PS_ECLOSED] = "closed",
	[PS_EPROTO] = "protocol error (malformed or unexpected message)",
	[PS_ENOTSUP] = "not supported",
	[PS_ECONNREFUSED] = "connection refused or peer unreachable",
	[PS_EADDRINUSE] = "address already in use",
	[PS_EABORTED] = "job aborted",
	[PS_EIO] = "I/O error",
	[PS_ECONFIG] = "configuration error",
	[PS_EAGAIN] = "try again",
	[PS_ENOENT] = "not found",
	[PS_ESTATE] = "invalid in the current state",
	[PS_EINTR] = "interrupted",
};

const char *ps_strerror(int err)
{
	if (err < 0 || err >= PS_ERR_COUNT || !messages[err])
		return "unknown error";
	return messages[err];
}

int ps_err_from_errno(int errnum)
{
	switch (errnum) {
	case 0:
		return PS_OK;
	case EINVAL:
		return PS_EINVAL;
	case ENOMEM:
		return PS_ENOMEM;
	case ETIMEDOUT:
		return PS_ETIMEDOUT;
	case EAGAIN:
		return PS_EAGAIN;
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return PS_ECONNREFUSED;
	case EADDRINUSE:
		return PS_EADDRINUSE;
	case ENOENT:
		return PS_ENOENT;
	case EINTR:
		return PS_EINTR;
	case ENOTSUP:
		return PS_ENOTSUP;
	case EPROTO:
		return PS_EPROTO;
	default:
		return PS_EIO;
	}
}
