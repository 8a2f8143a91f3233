/*
 * transport/seal_table.c - connections by user id (seal_table.h): a ring
 * of entries in the order first seen, found through an open-addressing
 * index (linear probing, backward-shift deletion).
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ordo/error.h"
#include "transport/seal_table.h"

#define UID_LEN (16 + 2 * PS_SEAL_CONN_LEN)

typedef struct entry {
	uint8_t id[8 + PS_SEAL_CONN_LEN]; /* key id, connection id */
	psi_seal *seal;                   /* NULL: a free slot */
} entry;

struct psi_seal_table {
	uint8_t secret[PS_SEAL_KEY_LEN];
	entry *ring;     /* cap slots, filled in the order first seen */
	size_t cap, n, oldest;
	uint32_t *index; /* mask + 1 slots: ring slot + 1, or 0 */
	size_t mask;
};

static size_t hash_of(const uint8_t id[8 + PS_SEAL_CONN_LEN])
{
	uint64_t h;
	/* the connection id is random: its first bytes are a hash */
	memcpy(&h, id + 8, sizeof(h));
	return (size_t)(h ^ (h >> 29));
}

int psi_seal_table_new(const uint8_t secret[PS_SEAL_KEY_LEN], size_t cap,
		       psi_seal_table **t_p)
{
	psi_seal_table *t = calloc(1, sizeof(*t));
	size_t slots = 4;

	*t_p = NULL;
	if (!t || cap == 0) {
		free(t);
		return t ? PS_EINVAL : PS_ENOMEM;
	}
	while (slots < 2 * cap)
		slots <<= 1;
	t->ring = calloc(cap, sizeof(*t->ring));
	t->index = calloc(slots, sizeof(*t->index));
	if (!t->ring || !t->index) {
		psi_seal_table_free(&t);
		return PS_ENOMEM;
	}
	memcpy(t->secret, secret, PS_SEAL_KEY_LEN);
	t->cap = cap;
	t->mask = slots - 1;
	*t_p = t;
	return PS_OK;
}

void psi_seal_table_free(psi_seal_table **t_p)
{
	psi_seal_table *t = *t_p;

	if (!t)
		return;
	if (t->ring)
		for (size_t i = 0; i < t->cap; i++)
			psi_seal_free(&t->ring[i].seal);
	sodium_memzero(t->secret, sizeof(t->secret));
	free(t->ring);
	free(t->index);
	free(t);
	*t_p = NULL;
}

/* The index slot holding id, or the empty one where it would go. */
static size_t find(const psi_seal_table *t, const uint8_t *id)
{
	size_t i = hash_of(id) & t->mask;

	while (t->index[i] &&
	       memcmp(t->ring[t->index[i] - 1].id, id,
		      sizeof(t->ring[0].id)) != 0)
		i = (i + 1) & t->mask;
	return i;
}

/* Forgets the oldest entry: its ring slot freed, its index slot emptied
 * and the probe run after it shifted back. */
static void forget_oldest(psi_seal_table *t)
{
	entry *e = &t->ring[t->oldest];
	size_t i = find(t, e->id);

	t->index[i] = 0;
	for (size_t j = (i + 1) & t->mask; t->index[j];
	     j = (j + 1) & t->mask) {
		size_t home = hash_of(t->ring[t->index[j] - 1].id) & t->mask;
		/* move j back to i unless its home lies in (i, j] */
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->index[i] = t->index[j];
			t->index[j] = 0;
			i = j;
		}
	}
	psi_seal_free(&e->seal);
	t->oldest = (t->oldest + 1) % t->cap;
	t->n--;
}

int psi_seal_table_get(psi_seal_table *t, const char *uid, psi_seal **s_p)
{
	uint8_t id[8 + PS_SEAL_CONN_LEN];
	size_t len = 0;

	if (!uid || strlen(uid) != UID_LEN ||
	    sodium_hex2bin(id, sizeof(id), uid, UID_LEN, NULL, &len, NULL) !=
		0 ||
	    len != sizeof(id))
		return PS_EPROTO;
	size_t i = find(t, id);
	if (t->index[i]) {
		*s_p = t->ring[t->index[i] - 1].seal;
		return PS_OK;
	}
	if (t->n == t->cap) {
		forget_oldest(t);
		i = find(t, id);
	}
	size_t slot = (t->oldest + t->n) % t->cap;
	uint64_t kid = 0;
	for (int b = 0; b < 8; b++) /* the hex reads big-endian */
		kid = kid << 8 | id[b];
	int rc = psi_seal_new(t->secret, kid, id + 8, &t->ring[slot].seal);
	if (rc != PS_OK)
		return rc;
	memcpy(t->ring[slot].id, id, sizeof(id));
	t->index[i] = (uint32_t)slot + 1;
	t->n++;
	*s_p = t->ring[slot].seal;
	return PS_OK;
}

size_t psi_seal_table_size(const psi_seal_table *t)
{
	return t->n;
}
