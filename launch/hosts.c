/*
 * launch/hosts.c - the host file of ps-launch --hosts, placement, shell
 * quoting (hosts.h).
 */
#include "launch/hosts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ordo/error.h"

#define SLOTS_MAX 4096

int ps_resolve_ipv4(const char *host, char *addr, size_t cap, char *why,
		    size_t whylen)
{
	struct addrinfo hints = {.ai_family = AF_INET}, *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);

	if (rc != 0 || !res) {
		snprintf(why, whylen, "%s", rc ? gai_strerror(rc) : "no address");
		return PS_ENOENT;
	}
	const struct sockaddr_in *sin = (const void *)res->ai_addr;
	inet_ntop(AF_INET, &sin->sin_addr, addr, (socklen_t)cap);
	freeaddrinfo(res);
	return PS_OK;
}

/* The host part of "[user@]host" resolved to IPv4. */
static int resolve(const char *dest, char *addr, size_t cap, char *why,
		   size_t whylen)
{
	const char *host = strrchr(dest, '@');
	char gai[96];

	host = host ? host + 1 : dest;
	if (ps_resolve_ipv4(host, addr, cap, gai, sizeof(gai)) != PS_OK) {
		snprintf(why, whylen, "cannot resolve '%.200s' to an IPv4 "
			 "address here (%s); give it as addr=A.B.C.D", host,
			 gai);
		return PS_ENOENT;
	}
	return PS_OK;
}

/* One field after the destination: slots=N or addr=A. */
static int parse_field(ps_host *h, const char *f, char *why, size_t whylen)
{
	if (strncmp(f, "slots=", 6) == 0) {
		char *end;
		long v;
		errno = 0;
		v = strtol(f + 6, &end, 10);
		if (errno || end == f + 6 || *end || v < 1 || v > SLOTS_MAX) {
			snprintf(why, whylen, "slots = '%s' is not a number "
				 "in [1, %d]", f + 6, SLOTS_MAX);
			return PS_EINVAL;
		}
		h->slots = (int)v;
		return PS_OK;
	}
	if (strncmp(f, "addr=", 5) == 0) {
		struct in_addr a;
		if (inet_pton(AF_INET, f + 5, &a) != 1) {
			snprintf(why, whylen, "addr = '%s' is not an IPv4 "
				 "address", f + 5);
			return PS_EINVAL;
		}
		snprintf(h->addr, sizeof(h->addr), "%s", f + 5);
		return PS_OK;
	}
	snprintf(why, whylen, "unknown field '%s' (a line is: HOST "
		 "[slots=N] [addr=A.B.C.D])", f);
	return PS_EINVAL;
}

/* One non-empty line (comment stripped) into h. */
static int parse_line(char *line, ps_host *h, char *why, size_t whylen)
{
	char *save = NULL, *tok = strtok_r(line, " \t\r", &save);

	if (strlen(tok) >= sizeof(h->dest) || tok[0] == '-') {
		snprintf(why, whylen, "'%.40s' is not a host", tok);
		return PS_EINVAL;
	}
	snprintf(h->dest, sizeof(h->dest), "%s", tok);
	h->slots = 1;
	h->addr[0] = '\0';
	while ((tok = strtok_r(NULL, " \t\r", &save)))
		if (parse_field(h, tok, why, whylen) != PS_OK)
			return PS_EINVAL;
	if (!h->addr[0])
		return resolve(h->dest, h->addr, sizeof(h->addr), why, whylen);
	return PS_OK;
}

int ps_hosts_load(const char *path, ps_host **hosts, int *n, char *why,
		  size_t whylen)
{
	FILE *f = fopen(path, "r");
	ps_host *v = NULL;
	int count = 0, alloc = 0, lineno = 0, rc = PS_OK;
	char line[1024], reason[512];

	if (!f) {
		snprintf(why, whylen, "--hosts %s: %s", path, strerror(errno));
		return errno == ENOENT ? PS_ENOENT : PS_EIO;
	}
	while (rc == PS_OK && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(why, whylen, "%s:%d: line longer than %zu "
				 "characters", path, lineno, sizeof(line) - 2);
			rc = PS_EINVAL;
			break;
		}
		line[strcspn(line, "#\n")] = '\0';
		if (line[strspn(line, " \t\r")] == '\0')
			continue;
		if (count == alloc) {
			alloc = alloc ? 2 * alloc : 8;
			ps_host *nv = realloc(v, (size_t)alloc * sizeof(*v));
			if (!nv) {
				rc = PS_ENOMEM;
				snprintf(why, whylen, "out of memory");
				break;
			}
			v = nv;
		}
		rc = parse_line(line, &v[count], reason, sizeof(reason));
		if (rc != PS_OK)
			snprintf(why, whylen, "%s:%d: %s", path, lineno, reason);
		v[count].line = lineno;
		count++;
	}
	fclose(f);
	if (rc == PS_OK && count == 0) {
		snprintf(why, whylen, "--hosts %s: no hosts in the file", path);
		rc = PS_EINVAL;
	}
	if (rc != PS_OK) {
		free(v);
		return rc;
	}
	*hosts = v;
	*n = count;
	return PS_OK;
}

int ps_hosts_place(const ps_host *hosts, int n, int rank)
{
	int total = 0;

	for (int i = 0; i < n; i++)
		total += hosts[i].slots;
	rank %= total;
	for (int i = 0; i < n; i++) {
		if (rank < hosts[i].slots)
			return i;
		rank -= hosts[i].slots;
	}
	return 0; /* not reached */
}

int ps_shell_quote(const char *s, char *out, size_t cap, size_t *len)
{
	size_t k = *len;

	if (k + 1 >= cap)
		return PS_EINVAL;
	out[k++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			if (k + 4 >= cap)
				return PS_EINVAL;
			memcpy(out + k, "'\\''", 4);
			k += 4;
		} else {
			if (k + 1 >= cap)
				return PS_EINVAL;
			out[k++] = *s;
		}
	}
	if (k + 2 > cap)
		return PS_EINVAL;
	out[k++] = '\'';
	out[k] = '\0';
	*len = k;
	return PS_OK;
}

/* Appends s to buf (cap bytes, *len used, NUL-terminated); PS_EINVAL,
 * with nothing written past the end, when it does not fit. */
static int append(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len >= cap || n >= cap - *len)
		return PS_EINVAL;
	memcpy(buf + *len, s, n + 1);
	*len += n;
	return PS_OK;
}

/* A quoted word takes at most 4 bytes per byte ('\'' for '), its 2
 * quotes and the space before it. */
static size_t word_cap(const char *s)
{
	return 4 * strlen(s) + 3;
}

char *ps_remote_command(const char *cwd, const char *const *env,
			const char *wrapper, const char *const *argv)
{
	static const char *const fixed[] = {"cd ", " 2>/dev/null; exec env",
					    " sh -c ", " ordo"};
	size_t cap = 1 + word_cap(cwd) + word_cap(wrapper), len = 0;
	char *cmd;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		cap += strlen(fixed[i]);
	for (const char *const *e = env; e && *e; e++)
		cap += word_cap(*e);
	for (const char *const *a = argv; *a; a++)
		cap += word_cap(*a);
	cmd = malloc(cap);
	if (!cmd)
		return NULL;
	/* cap holds it all: a failed append is a bug, and writes nothing */
	int rc = append(cmd, cap, &len, fixed[0]);
	if (rc == PS_OK)
		rc = ps_shell_quote(cwd, cmd, cap, &len);
	if (rc == PS_OK)
		rc = append(cmd, cap, &len, fixed[1]);
	for (const char *const *e = env; rc == PS_OK && e && *e; e++) {
		rc = append(cmd, cap, &len, " ");
		if (rc == PS_OK)
			rc = ps_shell_quote(*e, cmd, cap, &len);
	}
	if (rc == PS_OK)
		rc = append(cmd, cap, &len, fixed[2]);
	if (rc == PS_OK)
		rc = ps_shell_quote(wrapper, cmd, cap, &len);
	if (rc == PS_OK)
		rc = append(cmd, cap, &len, fixed[3]);
	for (const char *const *a = argv; rc == PS_OK && *a; a++) {
		rc = append(cmd, cap, &len, " ");
		if (rc == PS_OK)
			rc = ps_shell_quote(*a, cmd, cap, &len);
	}
	if (rc != PS_OK) {
		free(cmd);
		return NULL;
	}
	return cmd;
}
