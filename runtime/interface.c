/*
 * runtime/interface.c - cluster.interface (interface.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ordo/error.h"
#include "runtime/interface.h"

int ps_interface_ipv4(const char *name, char *addr, size_t cap, char *why,
		      size_t whylen)
{
	struct ifaddrs *all = NULL;
	char list[1024] = "";
	size_t used = 0;
	int found = 0, exists = 0;

	if (getifaddrs(&all) != 0) {
		snprintf(why, whylen, "cluster.interface = %s: cannot list "
			 "the network interfaces: %s", name, strerror(errno));
		return PS_EIO;
	}
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, name) == 0)
			exists = 1;
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)i->ifa_addr)->sin_addr,
			  a, sizeof(a));
		if (!found && strcmp(i->ifa_name, name) == 0) {
			snprintf(addr, cap, "%s", a);
			found = 1;
		}
		if (used < sizeof(list)) {
			int n = snprintf(list + used, sizeof(list) - used,
					 "%s%s %s", used ? ", " : "",
					 i->ifa_name, a);
			if (n > 0)
				used += (size_t)n;
		}
	}
	freeifaddrs(all);
	if (found)
		return PS_OK;
	snprintf(why, whylen,
		 "cluster.interface = %s: %s; interfaces with an IPv4 "
		 "address here: %s",
		 name,
		 exists ? "the interface has no IPv4 address"
			: "no such network interface",
		 used ? list : "(none)");
	return PS_ENOENT;
}
