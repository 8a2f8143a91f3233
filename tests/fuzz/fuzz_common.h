/*
 * tests/fuzz/fuzz_common.h - shared by the libFuzzer harnesses.
 *
 * The loaders under test read files (config, model, checkpoint): the
 * harnesses hand them the input through a memfd's /proc/self/fd path, so
 * nothing is written to disk per execution. A harness aborts (libFuzzer
 * reports a crash) when an oracle fails: that is a finding, as much as an
 * ASan or UBSan report.
 */
#ifndef ORDO_TESTS_FUZZ_COMMON_H
#define ORDO_TESTS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memfd holding data[0..len); its readable path in path (>= 32 bytes).
 * Returns the fd (close it when done), or -1. */
static inline int fuzz_memfd(const void *data, size_t len, char *path,
			     size_t cap)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	const unsigned char *p = data;
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

/* An oracle that failed: report and abort (a libFuzzer crash). */
#define FUZZ_CHECK(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz oracle failed: %s: ", #cond);     \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			abort();                                               \
		}                                                              \
	} while (0)

/* A directory of the harness's own, $TMPDIR/ordo-fuzz-NAME.XXXXXX (made
 * into dir, cap bytes), for readers of directories; cleanup (which empties
 * and removes it) runs at exit. */
static inline void fuzz_private_dir(char *dir, size_t cap, const char *name,
				    void (*cleanup)(void))
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, cap, "%s/ordo-fuzz-%s.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", name);
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
	atexit(cleanup);
}

/* A harness whose readers log their errors: quiet (errors are the point). */
#define FUZZ_QUIET_INITIALIZE                                                  \
	int LLVMFuzzerInitialize(int *argc, char ***argv);                     \
	int LLVMFuzzerInitialize(int *argc, char ***argv)                      \
	{                                                                      \
		(void)argc;                                                    \
		(void)argv;                                                    \
		ps_log_init("fuzz", -1);                                       \
		return 0;                                                      \
	}

#endif /* ORDO_TESTS_FUZZ_COMMON_H */
