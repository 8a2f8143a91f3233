/*
 * tests/support/loopback.c - plain TCP sockets on 127.0.0.1 (loopback.h).
 */
#include "support/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int test_loopback_socket(int backlog, int *port_p)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    (backlog > 0 && listen(fd, backlog) != 0) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		close(fd);
		return -1;
	}
	*port_p = ntohs(sa.sin_port);
	return fd;
}
