/*
 * tests/fuzz/fuzz_hosts.c - libFuzzer harness for ps-launch's host file
 * (launch/hosts.h: ps_hosts_load, --hosts FILE), its placement of ranks
 * and the shell quoting of what goes to ssh.
 *
 * Input: the file. A host without addr= is resolved with getaddrinfo;
 * the harness is linked with -Wl,--wrap=getaddrinfo and its resolver
 * never asks a name server: "localhost" is 127.0.0.1, anything else is
 * given to the real getaddrinfo with AI_NUMERICHOST (a numeric address
 * resolves, a name fails as an unknown one would). No network, the same
 * answer on every machine.
 *
 * Oracle: every error has a message; what loads is at least one host,
 * each with a destination that is one word not starting with '-', slots
 * in [1, 4096], an IPv4 address and increasing line numbers; written out
 * as "DEST slots=N addr=A" lines it loads again to the same hosts;
 * ps_hosts_place puts rank r on the host of slot r mod (total slots);
 * ps_shell_quote's quoting of a destination reads back as it.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <string.h>

#include "common/log.h"
#include "launch/hosts.h"
#include "ordo/error.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __real_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res);

FUZZ_QUIET_INITIALIZE

/* The resolver hosts.c calls (--wrap): numeric only, never a lookup. */
int __wrap_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res)
{
	struct addrinfo h = hints ? *hints : (struct addrinfo){0};

	h.ai_flags |= AI_NUMERICHOST;
	if (node && strcmp(node, "localhost") == 0)
		node = "127.0.0.1";
	return __real_getaddrinfo(node, service, &h, res);
}

/* The word ps_shell_quote made of s, read back as sh would. */
static void check_quote(const char *s)
{
	char q[4 * PS_HOSTS_DEST_MAX + 8], back[PS_HOSTS_DEST_MAX];
	size_t len = 0, k = 0;

	FUZZ_CHECK(ps_shell_quote(s, q, sizeof(q), &len) == PS_OK,
		   "'%s' does not fit 4 bytes a byte", s);
	FUZZ_CHECK(len == strlen(q) && q[0] == '\'' && q[len - 1] == '\'',
		   "quoted '%s' as %s", s, q);
	for (size_t i = 0; i < len;) {
		if (q[i] == '\'') { /* a quoted run up to the next ' */
			for (i++; i < len && q[i] != '\''; i++)
				back[k++] = q[i];
			FUZZ_CHECK(i < len, "unterminated quote in %s", q);
			i++;
		} else {
			FUZZ_CHECK(q[i] == '\\' && i + 1 < len,
				   "unquoted '%c' in %s", q[i], q);
			back[k++] = q[i + 1];
			i += 2;
		}
		FUZZ_CHECK(k < sizeof(back), "quoted %s reads back longer", q);
	}
	back[k] = '\0';
	FUZZ_CHECK(strcmp(back, s) == 0, "%s reads back as '%s', not '%s'", q,
		   back, s);
}

static void check_hosts(const ps_host *h, int n)
{
	struct in_addr a;
	long total = 0;


	FUZZ_CHECK(n >= 1, "%d hosts", n);
	for (int i = 0; i < n; i++) {
		size_t dl = strlen(h[i].dest);
		FUZZ_CHECK(dl > 0 && dl < PS_HOSTS_DEST_MAX &&
				   h[i].dest[0] != '-' &&
				   strcspn(h[i].dest, " \t\r\n#") == dl,
			   "host %d: destination '%s'", i, h[i].dest);
		FUZZ_CHECK(h[i].slots >= 1 && h[i].slots <= 4096,
			   "host %d: %d slots", i, h[i].slots);
		FUZZ_CHECK(inet_pton(AF_INET, h[i].addr, &a) == 1,
			   "host %d: address '%s'", i, h[i].addr);
		FUZZ_CHECK(h[i].line >= 1 && (i == 0 || h[i].line > h[i - 1].line),
			   "host %d: line %d", i, h[i].line);
		check_quote(h[i].dest);
		total += h[i].slots;
	}
	/* rank r runs on the host of slot r mod total, slots in file order
	 * (the first 4096 ranks of two rounds) */
	int want = 0;
	long before = 0; /* the slots of the hosts before want */
	for (long r = 0; r < total && r < 4096; r++) {
		while (r >= before + h[want].slots)
			before += h[want++].slots;
		int i = ps_hosts_place(h, n, (int)r);
		int j = ps_hosts_place(h, n, (int)(r + total));
		FUZZ_CHECK(i == want && j == want,
			   "ranks %ld and %ld on hosts %d and %d, not %d", r,
			   r + total, i, j, want);
	}
}

/* The hosts written as a host file, loaded again: the same hosts. */
static void check_round_trip(const ps_host *h, int n)
{
	char *text = NULL, path[64], why[1024];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	FUZZ_CHECK(f != NULL, "open_memstream");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s slots=%d addr=%s\n", h[i].dest, h[i].slots,
			h[i].addr);
	fclose(f);
	int fd = fuzz_memfd(text, len, path, sizeof(path));
	FUZZ_CHECK(fd >= 0, "memfd");
	ps_host *again = NULL;
	int m = 0;
	int rc = ps_hosts_load(path, &again, &m, why, sizeof(why));
	close(fd);
	FUZZ_CHECK(rc == PS_OK, "the hosts written out do not load: %s\n%s",
		   why, text);
	FUZZ_CHECK(m == n, "%d hosts read back as %d", n, m);
	for (int i = 0; i < n; i++)
		FUZZ_CHECK(strcmp(h[i].dest, again[i].dest) == 0 &&
				   strcmp(h[i].addr, again[i].addr) == 0 &&
				   h[i].slots == again[i].slots &&
				   again[i].line == i + 1,
			   "host %d read back differs", i);
	free(again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], why[1024];
	ps_host *hosts = NULL;
	int n = 0;

	int fd = fuzz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	why[0] = '\0';
	int rc = ps_hosts_load(path, &hosts, &n, why, sizeof(why));
	close(fd);
	if (rc != PS_OK) {
		FUZZ_CHECK(why[0] != '\0', "an error without a message");
		return 0;
	}
	check_hosts(hosts, n);
	check_round_trip(hosts, n);
	free(hosts);
	return 0;
}
