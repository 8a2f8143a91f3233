/*
 * transport/zap.c - who may connect to a tcp node (zap.h).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <zmq.h>

#include "common/log.h"
#include "ordo/error.h"
#include "transport/seal.h"
#include "transport/zap.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN   "ordo"
#define FRAMES_MAX   8
#define PLAIN_USER   "ordo"

struct psi_zap {
	void *zap; /* REP on ZAP_ENDPOINT */
	void *ctl; /* PAIR: a byte from stop ends the thread */
	void *ctl_peer;
	void *mon; /* PAIR on the ROUTER's monitor */
	pthread_t thread;
	int thread_started;
	int plain;                          /* secret or sealed, else curve */
	int sealed;                         /* sealed */
	uint8_t job_key[32];                /* curve */
	char secret[PS_SECRET_LEN + 1];     /* secret */
	uint8_t secret_bin[PS_SEAL_KEY_LEN]; /* sealed: the secret decoded */
	uint64_t refused[4]; /* per kind of refusal */
};

enum { R_KEY, R_MECHANISM, R_DAMAGED, R_OTHER };

static int frame_is(zmq_msg_t *f, const char *s)
{
	return zmq_msg_size(f) == strlen(s) &&
	       memcmp(zmq_msg_data(f), s, strlen(s)) == 0;
}

/* sealed: does the PLAIN request (frames 6, 7) carry a proof made with
 * the job's secret? Its token's key id and connection id then. */
static int admits_sealed(const psi_zap *c, zmq_msg_t *f, int n,
			 uint64_t *kid, uint8_t conn[PS_SEAL_CONN_LEN])
{
	uint8_t token[PS_SEAL_TOKEN_LEN];

	if (n < 8 || !frame_is(&f[6], PS_SEAL_USER) ||
	    psi_seal_proof_open(c->secret_bin, zmq_msg_data(&f[7]),
				zmq_msg_size(&f[7]), token, conn) != PS_OK)
		return 0;
	*kid = ps_token_kid_bytes(token);
	memset(token, 0, sizeof(token));
	return 1;
}

/* Does the request's mechanism and credentials (frames 5...) admit the
 * peer? *mech: whether it used the job's mechanism at all; key: the
 * CURVE key it presented, in Z85, for the log; *kid: in secret and
 * sealed, the key id of the token presented (0: none); conn: in sealed,
 * the connection id. */
static int admits(const psi_zap *c, zmq_msg_t *f, int n, int *mech,
		  char key[41], uint64_t *kid, uint8_t conn[PS_SEAL_CONN_LEN])
{
	*kid = 0;
	if (c->sealed) {
		*mech = frame_is(&f[5], "PLAIN");
		return *mech && admits_sealed(c, f, n, kid, conn);
	}
	if (c->plain) {
		*mech = frame_is(&f[5], "PLAIN");
		if (!*mech || n < 8 || !frame_is(&f[6], PLAIN_USER))
			return 0;
		size_t len = zmq_msg_size(&f[7]);
		const char *pw = zmq_msg_data(&f[7]);
		if ((len != PS_SECRET_LEN && len != 2 * PS_SECRET_LEN) ||
		    !ps_secret_equal(pw, c->secret, PS_SECRET_LEN))
			return 0;
		if (len == 2 * PS_SECRET_LEN) {
			char token[PS_SECRET_LEN + 1];
			memcpy(token, pw + PS_SECRET_LEN, PS_SECRET_LEN);
			token[PS_SECRET_LEN] = '\0';
			int valid = ps_secret_valid(token);
			if (valid)
				*kid = ps_token_kid(token);
			memset(token, 0, sizeof(token));
			return valid;
		}
		return 1;
	}
	*mech = frame_is(&f[5], "CURVE");
	if (!*mech || n < 7 || zmq_msg_size(&f[6]) != 32)
		return 0;
	zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
	return memcmp(zmq_msg_data(&f[6]), c->job_key, 32) == 0;
}

static void note_refusal(psi_zap *c, int kind, const char *fmt,
			 const char *a, const char *b)
{
	/* as psi_note_drop, per kind (one kind of intruder must not hide
	 * another): the first ones, then one line per 1000 */
	uint64_t n = ++c->refused[kind];
	if (n <= 20 || n % 1000 == 0) {
		char what[512];
		snprintf(what, sizeof(what), fmt, a, b);
		PS_WARN("security: refused %s (%llu of this kind so far)",
			what, (unsigned long long)n);
	}
}

/* One ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials... */
static void handle_zap(psi_zap *c)
{
	zmq_msg_t f[FRAMES_MAX];
	int n = 0, more = 1;

	while (more && n < FRAMES_MAX) {
		zmq_msg_init(&f[n]);
		if (zmq_msg_recv(&f[n], c->zap, 0) < 0) {
			zmq_msg_close(&f[n]);
			break;
		}
		more = zmq_msg_more(&f[n]);
		n++;
	}
	while (more) { /* more frames than any request has: drain them */
		zmq_msg_t x;
		zmq_msg_init(&x);
		if (zmq_msg_recv(&x, c->zap, 0) < 0)
			more = 0;
		else
			more = zmq_msg_more(&x);
		zmq_msg_close(&x);
	}
	if (n < 6) {
		for (int i = 0; i < n; i++)
			zmq_msg_close(&f[i]);
		return; /* not a request: REP needs no answer to a broken one */
	}

	char addr[128] = "?", key[41] = "(none)";
	size_t al = zmq_msg_size(&f[3]) < sizeof(addr) - 1
			    ? zmq_msg_size(&f[3])
			    : sizeof(addr) - 1;
	memcpy(addr, zmq_msg_data(&f[3]), al);
	addr[al] = '\0';
	int mech;
	uint64_t kid;
	uint8_t conn[PS_SEAL_CONN_LEN] = {0};
	int ok = admits(c, f, n, &mech, key, &kid, conn);
	if (!ok && c->sealed)
		note_refusal(c, R_KEY, "a peer at %s: it did not prove it "
			     "holds the job's secret (security.mode = "
			     "sealed)%s", addr,
			     mech ? "" : " (another mechanism)");
	else if (!ok && c->plain)
		note_refusal(c, R_KEY, "a peer at %s: it did not present the "
			     "job's secret%s", addr,
			     mech ? "" : " (another mechanism)");
	else if (!ok)
		note_refusal(c, R_KEY, "a peer at %s: its key %s is not the "
			     "job's", addr, key);

	const char *status = ok ? "200" : "400";
	const char *text = ok ? "OK"
		       : c->plain ? "not the secret of this job"
				  : "not a key of this job";
	zmq_send(c->zap, "1.0", 3, ZMQ_SNDMORE);
	zmq_send(c->zap, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]),
		 ZMQ_SNDMORE);
	zmq_send(c->zap, status, 3, ZMQ_SNDMORE);
	zmq_send(c->zap, text, strlen(text), ZMQ_SNDMORE);
	/* user id: the key id, which every message of the connection
	 * carries (its "User-Id" property; tcp.c reads it), and in sealed
	 * the connection id its frames are sealed under */
	char uid[17 + 2 * PS_SEAL_CONN_LEN] = "";
	if (ok && kid)
		snprintf(uid, 17, "%016llx", (unsigned long long)kid);
	if (ok && kid && c->sealed)
		sodium_bin2hex(uid + 16, sizeof(uid) - 16, conn,
			       PS_SEAL_CONN_LEN);
	zmq_send(c->zap, uid, strlen(uid), ZMQ_SNDMORE);
	zmq_send(c->zap, "", 0, 0);           /* metadata */
	for (int i = 0; i < n; i++)
		zmq_msg_close(&f[i]);
}

/* One monitor event: a handshake that failed. ZAP refusals are logged by
 * handle_zap already (with the peer's address and key). */
static void handle_event(psi_zap *c)
{
	uint8_t ev[6];
	char ep[256];
	int n = zmq_recv(c->mon, ev, sizeof(ev), 0);
	int m = zmq_recv(c->mon, ep, sizeof(ep) - 1, 0);
	if (n < 6 || m < 0)
		return;
	ep[m < (int)sizeof(ep) - 1 ? m : (int)sizeof(ep) - 1] = '\0';
	int event = ev[0] | ev[1] << 8;
	uint32_t value = (uint32_t)ev[2] | (uint32_t)ev[3] << 8 |
			 (uint32_t)ev[4] << 16 | (uint32_t)ev[5] << 24;
	char why[64];
	int kind = R_OTHER;
	if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
		return;
	if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
	    value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
		kind = R_MECHANISM;
		snprintf(why, sizeof(why), "%s",
			 c->plain ? "it does not present a job secret "
				    "(security.mode none or curve?)"
				  : "it does not use CURVE");
	} else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
		kind = R_DAMAGED;
		snprintf(why, sizeof(why),
			 "a damaged or replayed handshake (error 0x%x)",
			 (unsigned)value);
	} else {
		snprintf(why, sizeof(why), "its handshake failed (%s)",
			 zmq_strerror((int)value));
	}
	note_refusal(c, kind, "a peer connecting to %s: %s", ep, why);
}

static void *zap_main(void *arg)
{
	psi_zap *c = arg;
	zmq_pollitem_t it[3] = {{.socket = c->ctl, .events = ZMQ_POLLIN},
				{.socket = c->zap, .events = ZMQ_POLLIN},
				{.socket = c->mon, .events = ZMQ_POLLIN}};
	for (;;) {
		if (zmq_poll(it, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* the context is terminating */
		}
		if (it[0].revents & ZMQ_POLLIN)
			break;
		if (it[1].revents & ZMQ_POLLIN)
			handle_zap(c);
		if (it[2].revents & ZMQ_POLLIN)
			handle_event(c);
	}
	return NULL;
}

static void wipe(psi_zap *c)
{
	sodium_memzero(c->secret, sizeof(c->secret));
	sodium_memzero(c->secret_bin, sizeof(c->secret_bin));
}

static void close_all(psi_zap *c)
{
	int zero = 0;
	void *socks[4] = {c->zap, c->ctl, c->ctl_peer, c->mon};
	for (int i = 0; i < 4; i++)
		if (socks[i]) {
			zmq_setsockopt(socks[i], ZMQ_LINGER, &zero,
				       sizeof(zero));
			zmq_close(socks[i]);
		}
}

int psi_zap_start(void *ctx, void *router, const psi_zap_job *job,
		  psi_zap **c_p)
{
	static unsigned seq;
	char ctl_ep[64], mon_ep[64];
	int one = 1, rc;
	psi_zap *c = calloc(1, sizeof(*c));

	*c_p = NULL;
	if (!c)
		return PS_ENOMEM;
	c->plain = job->secret && job->secret[0];
	c->sealed = c->plain && job->sealed;
	if (c->plain) {
		if (strlen(job->secret) != PS_SECRET_LEN ||
		    (c->sealed && !ps_secret_valid(job->secret))) {
			free(c);
			return PS_EINVAL;
		}
		memcpy(c->secret, job->secret, sizeof(c->secret));
		if (c->sealed)
			ps_secret_bytes(job->secret, c->secret_bin);
	} else if (!job->keys || !zmq_z85_decode(c->job_key, job->keys->pub)) {
		free(c);
		return PS_EINVAL;
	}
	unsigned k = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	snprintf(ctl_ep, sizeof(ctl_ep), "inproc://ordo-zap-ctl-%u", k);
	snprintf(mon_ep, sizeof(mon_ep), "inproc://ordo-zap-mon-%u", k);
	c->zap = zmq_socket(ctx, ZMQ_REP);
	c->ctl = zmq_socket(ctx, ZMQ_PAIR);
	c->ctl_peer = zmq_socket(ctx, ZMQ_PAIR);
	c->mon = zmq_socket(ctx, ZMQ_PAIR);
	if (c->plain)
		rc = zmq_setsockopt(router, ZMQ_PLAIN_SERVER, &one,
				    sizeof(one));
	else
		rc = zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one,
				    sizeof(one)) != 0 ||
		     zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY,
				    job->keys->sec, PS_KEY_Z85_LEN) != 0;
	if (!c->zap || !c->ctl || !c->ctl_peer || !c->mon ||
	    zmq_bind(c->zap, ZAP_ENDPOINT) != 0 ||
	    zmq_bind(c->ctl, ctl_ep) != 0 ||
	    zmq_connect(c->ctl_peer, ctl_ep) != 0 ||
	    zmq_socket_monitor(router, mon_ep,
			       ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
				   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
				   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0 ||
	    zmq_connect(c->mon, mon_ep) != 0 || rc != 0 ||
	    zmq_setsockopt(router, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN,
			   strlen(ZAP_DOMAIN)) != 0) {
		PS_ERROR("security: cannot set up %s: %s",
			 c->plain ? "the job secret's check" : "CURVE",
			 zmq_strerror(errno));
		close_all(c);
		wipe(c);
		free(c);
		return PS_EIO;
	}
	/* the handler thread takes no signal: the process's handlers
	 * (SIGCHLD, SIGINT, ...) run on the threads that expect them, as
	 * libzmq's own threads block them too */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int started = pthread_create(&c->thread, NULL, zap_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (started != 0) {
		PS_ERROR("security: cannot start the ZAP handler thread");
		close_all(c);
		wipe(c);
		free(c);
		return PS_EIO;
	}
	c->thread_started = 1;
	*c_p = c;
	return PS_OK;
}

void psi_zap_stop(psi_zap **c_p)
{
	psi_zap *c = *c_p;
	if (!c)
		return;
	if (c->thread_started) {
		zmq_send(c->ctl_peer, "", 0, 0);
		pthread_join(c->thread, NULL);
	}
	close_all(c);
	wipe(c);
	free(c);
	*c_p = NULL;
}

/* sealed: PLAIN with a proof of the secret for this connection. */
static int client_sealed(void *sock, const psi_zap_job *job,
			 const uint8_t *conn)
{
	uint8_t secret[PS_SEAL_KEY_LEN], token[PS_SEAL_TOKEN_LEN];
	char proof[PS_SEAL_PROOF_HEX + 1];
	int rc = PS_EINVAL;

	if (conn && ps_secret_valid(job->secret) &&
	    ps_secret_valid(job->token)) {
		ps_secret_bytes(job->secret, secret);
		ps_secret_bytes(job->token, token);
		rc = psi_seal_proof_make(secret, token, conn, proof);
	}
	if (rc == PS_OK &&
	    (zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, PS_SEAL_USER,
			    strlen(PS_SEAL_USER)) != 0 ||
	     zmq_setsockopt(sock, ZMQ_PLAIN_PASSWORD, proof,
			    PS_SEAL_PROOF_HEX) != 0))
		rc = PS_EIO;
	sodium_memzero(secret, sizeof(secret));
	sodium_memzero(token, sizeof(token));
	sodium_memzero(proof, sizeof(proof));
	return rc;
}

int psi_zap_client(void *sock, const psi_zap_job *job, const uint8_t *conn)
{
	if (job->secret && job->secret[0] && job->sealed)
		return client_sealed(sock, job, conn);
	if (job->secret && job->secret[0]) {
		/* the secret, then this node's token when it has one */
		char pw[2 * PS_SECRET_LEN + 1];
		int n = snprintf(pw, sizeof(pw), "%s%s", job->secret,
				 job->token ? job->token : "");
		int rc = zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, PLAIN_USER,
					strlen(PLAIN_USER)) != 0 ||
				 zmq_setsockopt(sock, ZMQ_PLAIN_PASSWORD, pw,
						(size_t)n) != 0
			     ? PS_EIO
			     : PS_OK;
		memset(pw, 0, sizeof(pw));
		return rc;
	}
	if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, job->keys->pub,
			   PS_KEY_Z85_LEN) != 0 ||
	    zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, job->keys->pub,
			   PS_KEY_Z85_LEN) != 0 ||
	    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, job->keys->sec,
			   PS_KEY_Z85_LEN) != 0)
		return PS_EIO;
	return PS_OK;
}
