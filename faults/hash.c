/*
 * The 64-bit content hash that names the recorder's snapshot files
 * (cc_hash), over bytes at once or in pieces (cc_hash_init/feed/end).
 */
#include <stdint.h>
#include <string.h>

#include "record.h"

/*
 * The 64-bit content hash that names snapshot files. Not a cryptographic
 * hash: what it must give is that two different contents of one run do
 * not share a name by accident (about 2^-64 per pair), at the speed of
 * memory, because every write of a large file is hashed (BLAKE2b, which
 * it replaces, was a fifth of a traced program's time). Four lanes take
 * 8 bytes each per 32-byte stripe with a multiply and a rotate (the round
 * of xxHash64, whose constants these are), then the lanes, the tail and
 * the length are folded and the result avalanched. Nothing outside the
 * library computes it: the harness only reads the names.
 */
#define H_P1 0x9e3779b185ebca87ULL
#define H_P2 0xc2b2ae3d27d4eb4fULL
#define H_P3 0x165667b19e3779f9ULL
#define H_P4 0x85ebca77c2b2ae63ULL
#define H_P5 0x27d4eb2f165667c5ULL

static inline uint64_t rotl64(uint64_t x, int n)
{
	return (x << n) | (x >> (64 - n));
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);	/* host byte order: a name only has to hold on this machine */
	return w;
}

static inline uint64_t load32(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

static inline uint64_t h_round(uint64_t acc, uint64_t w)
{
	return rotl64(acc + w * H_P2, 31) * H_P1;
}

static inline uint64_t h_merge(uint64_t h, uint64_t lane)
{
	return (h ^ h_round(0, lane)) * H_P1 + H_P4;
}

/* the four lanes of the 32-byte stripes, as one */
static inline uint64_t h_lanes(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18);

	return h_merge(h_merge(h_merge(h_merge(h, a), b), c), d);
}

/* H after the stripes, the bytes [P, END) that make no whole stripe */
static uint64_t h_finish(uint64_t h, const uint8_t *p, const uint8_t *end)
{
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ h_round(0, load64(p)), 27) * H_P1 + H_P4;
	if (end - p >= 4) {
		h = rotl64(h ^ (load32(p) * H_P1), 23) * H_P2 + H_P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ (*p * H_P5), 11) * H_P1;
	h ^= h >> 33;
	h *= H_P2;
	h ^= h >> 29;
	h *= H_P3;
	h ^= h >> 32;
	return h;
}

uint64_t cc_hash(const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t a = H_P1 + H_P2, b = H_P2, c = 0, d = -H_P1;

		for (; end - p >= 32; p += 32) {
			a = h_round(a, load64(p));
			b = h_round(b, load64(p + 8));
			c = h_round(c, load64(p + 16));
			d = h_round(d, load64(p + 24));
		}
		h = h_lanes(a, b, c, d);
	} else {
		h = H_P5;
	}
	return h_finish(h + len, p, end);
}

/*
 * cc_hash over bytes that come in pieces (a file read a chunk at a time,
 * a hole given as zeros): the same stripes, the same tail, the same
 * answer as cc_hash over them all at once.
 */
void cc_hash_init(struct cc_hasher *h)
{
	h->a = H_P1 + H_P2;
	h->b = H_P2;
	h->c = 0;
	h->d = -H_P1;
	h->total = 0;
	h->tail_len = 0;
}

static inline void hash_stripe(struct cc_hasher *h, const uint8_t *p)
{
	h->a = h_round(h->a, load64(p));
	h->b = h_round(h->b, load64(p + 8));
	h->c = h_round(h->c, load64(p + 16));
	h->d = h_round(h->d, load64(p + 24));
}

void cc_hash_feed(struct cc_hasher *h, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	h->total += len;
	if (h->tail_len) {
		size_t n = 32 - h->tail_len < len ? 32 - h->tail_len : len;

		memcpy(h->tail + h->tail_len, p, n);
		h->tail_len += n;
		p += n;
		if (h->tail_len < 32)
			return;
		hash_stripe(h, h->tail);
		h->tail_len = 0;
	}
	for (; end - p >= 32; p += 32)
		hash_stripe(h, p);
	memcpy(h->tail, p, end - p);
	h->tail_len = end - p;
}

uint64_t cc_hash_end(const struct cc_hasher *st)
{
	uint64_t h = st->total >= 32 ? h_lanes(st->a, st->b, st->c, st->d) : H_P5;

	return h_finish(h + st->total, st->tail, st->tail + st->tail_len);
}

/* the digest's bytes in order, as hexdigest() prints them */
void cc_hash_hex(uint64_t h, char out[17])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 8; i++) {
		uint8_t b = h >> (8 * i);
		out[2 * i] = hex[b >> 4];
		out[2 * i + 1] = hex[b & 15];
	}
	out[16] = '\0';
}
