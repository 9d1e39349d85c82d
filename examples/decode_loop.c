/*
 * decode_loop.c - a user's serving loop over an attngen kernel: a paged f16
 * KV cache (one pool of pages of PAGE keys, each sequence's pages listed in
 * its row of a block table, as vLLM and FlashAttention keep them) shared by
 * up to SLOTS sequences in flight.  A sequence is admitted with its prompt
 * (one call that stores the prompt's keys and attends), then all sequences
 * in flight decode one token a step together (one call over the batch that
 * appends each token's K and V, rotated by RoPE inside the kernel, and
 * attends), and a sequence is retired at its length: its pages go back to
 * the pool for the next one.  Each call is checked against a plain loop
 * written here (the rotation, the f16 rounding of the stored rows, the
 * softmax), and no row a sequence does not own may change (free pages and
 * the rows past each sequence hold NaN).
 *
 *   bin/attngen generate examples/decode_loop.lua -o build/examples
 *   cc -std=c99 -O2 -fopenmp -Iruntime -Ibuild/examples examples/decode_loop.c \
 *      build/examples/decode_loop.c runtime/attn_runtime.c -lm
 *
 * (make decode-loop does both and runs it.)  All access to the cache goes
 * through the cache_* functions below.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_loop.h"

#define SLOTS 3      /* sequences in flight */
#define PAGE 16      /* keys a page: the config's paged.page */
#define MAXP 6       /* pages a sequence may hold: 96 keys */
#define PAGES 16     /* the pool, fewer than SLOTS * MAXP: sequences share it */
#define SEQS 7       /* sequences served in all */
#define HQ 8
#define HKV 2
#define D 64
#define THETA 10000.0
#define ROW ((size_t)HKV * D) /* a key's values, every kv head */
#define F16_NAN 0x7e00

/* ---- the cache: pools [PAGES][PAGE][HKV][D] of f16 K and V, a block table */

typedef struct {
    uint16_t *k, *v;
    int32_t table[SLOTS][MAXP]; /* each slot's pages in key order; -1 past them */
    int32_t len[SLOTS];         /* keys stored for the slot's sequence */
    int seq[SLOTS];             /* the sequence a slot serves, -1: free */
    int32_t free_list[PAGES];
    int nfree;
} cache;

static size_t cache_index(int32_t page, int64_t s, int hk) { return ((size_t)page * PAGE + (size_t)s) * ROW + (size_t)hk * D; }

static const uint16_t *cache_k_row(const cache *c, int slot, int64_t j, int hk)
{
    return c->k + cache_index(c->table[slot][j / PAGE], j % PAGE, hk);
}
static const uint16_t *cache_v_row(const cache *c, int slot, int64_t j, int hk)
{
    return c->v + cache_index(c->table[slot][j / PAGE], j % PAGE, hk);
}

static void cache_init(cache *c)
{
    const size_t n = (size_t)PAGES * PAGE * ROW;
    size_t e;
    int slot, i;
    c->k = (uint16_t *)malloc(n * sizeof(uint16_t));
    c->v = (uint16_t *)malloc(n * sizeof(uint16_t));
    if (!c->k || !c->v) {
        fprintf(stderr, "decode_loop: out of memory\n");
        exit(1);
    }
    for (e = 0; e < n; e++) c->k[e] = c->v[e] = F16_NAN;
    for (slot = 0; slot < SLOTS; slot++) {
        for (i = 0; i < MAXP; i++) c->table[slot][i] = -1;
        c->len[slot] = 0;
        c->seq[slot] = -1;
    }
    for (i = 0; i < PAGES; i++) c->free_list[i] = PAGES - 1 - i; /* handed out from page 0 on */
    c->nfree = PAGES;
}

/* Gives slot the pages its keys 0..n-1 need; 0 when the pool has too few. */
static int cache_reserve(cache *c, int slot, int64_t n)
{
    int64_t e;
    if (n > (int64_t)MAXP * PAGE) return 0;
    for (e = 0; e * PAGE < n; e++)
        if (c->table[slot][e] < 0) {
            if (c->nfree == 0) return 0;
            c->table[slot][e] = c->free_list[--c->nfree];
        }
    return 1;
}

/* Retires slot's sequence: its pages back to the pool, NaN again (so that
   the checks below see any write to a page nobody owns). */
static void cache_release(cache *c, int slot)
{
    int e;
    size_t i;
    for (e = 0; e < MAXP; e++) {
        const int32_t pg = c->table[slot][e];
        if (pg < 0) continue;
        for (i = cache_index(pg, 0, 0); i < cache_index(pg + 1, 0, 0); i++) c->k[i] = c->v[i] = F16_NAN;
        c->free_list[c->nfree++] = pg;
        c->table[slot][e] = -1;
    }
    c->len[slot] = 0;
    c->seq[slot] = -1;
}

/* Every row nobody owns still NaN: the free pages, and the slots past their keys. */
static void cache_check_untouched(const cache *c)
{
    int i, slot, e;
    int64_t s;
    for (i = 0; i < c->nfree; i++)
        for (s = 0; s < PAGE; s++)
            if (c->k[cache_index(c->free_list[i], s, 0)] != F16_NAN || c->v[cache_index(c->free_list[i], s, 0)] != F16_NAN) {
                fprintf(stderr, "decode_loop: free page %d was written\n", c->free_list[i]);
                exit(1);
            }
    for (slot = 0; slot < SLOTS; slot++)
        for (e = 0; e < MAXP; e++)
            for (s = 0; s < PAGE && c->table[slot][e] >= 0; s++)
                if (e * PAGE + s >= c->len[slot] && (c->k[cache_index(c->table[slot][e], s, 0)] != F16_NAN ||
                                                     c->v[cache_index(c->table[slot][e], s, 0)] != F16_NAN)) {
                    fprintf(stderr, "decode_loop: slot %d: a row past its keys was written\n", slot);
                    exit(1);
                }
}

/* The kernel's view of the slots of one call: the pools, their strides {page,
   slot, head}, the slots' table rows (copied in call order) and lengths. */
static void cache_args(const cache *c, const int *slots, int nb, attn_args *a, int32_t (*table)[MAXP], int32_t *lens)
{
    int b;
    for (b = 0; b < nb; b++) {
        memcpy(table[b], c->table[slots[b]], sizeof table[b]);
        lens[b] = c->len[slots[b]];
    }
    a->seq_k = (int64_t)MAXP * PAGE; /* the capacity: the keys a table row can name */
    a->k = c->k;
    a->v = c->v;
    a->k_stride[0] = (int64_t)PAGE * HKV * D;
    a->k_stride[1] = HKV * D;
    a->k_stride[2] = D;
    memcpy(a->v_stride, a->k_stride, sizeof a->v_stride);
    a->block_table = &table[0][0];
    a->block_table_stride = MAXP;
    a->num_pages = PAGES;
    a->seqlens_k = lens;
}

/* ---- inputs and the plain loop ------------------------------------------ */

static uint64_t rng = 2024;
static float draw(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* x rotated at position pos (rotate_half pairs, theta^(-2m/D)), in double */
static void rotate(double *x, int64_t pos)
{
    int m;
    for (m = 0; m < D / 2; m++) {
        const double a = (double)pos * pow(THETA, -2.0 * m / D), c = cos(a), s = sin(a);
        const double x0 = x[m], x1 = x[m + D / 2];
        x[m] = x0 * c - x1 * s;
        x[m + D / 2] = x0 * s + x1 * c;
    }
}

/* Checks the Ln rows just stored at keys len0.. of slot, and the output of
   rows q [Ln][HQ][D] (positions len0..len0+Ln-1) against the plain loop;
   returns the largest error of O. */
static double check_call(const cache *c, int slot, int64_t len0, int64_t ln, const float *q, const float *kn,
                         const float *vn, const float *o)
{
    double worst = 0.0, qd[D], kd[D], s[MAXP * PAGE];
    int64_t i, j, t;
    int h, d;
    for (t = 0; t < ln; t++) /* the stored rows: K rotated at its position, both rounded to f16 */
        for (h = 0; h < HKV; h++) {
            const float *src = kn + (t * HKV + h) * D;
            for (d = 0; d < D; d++) kd[d] = src[d];
            rotate(kd, len0 + t);
            for (d = 0; d < D; d++) {
                const float got = attn_f16_to_f32(cache_k_row(c, slot, len0 + t, h)[d]);
                const float want = attn_f16_to_f32(attn_f32_to_f16((float)kd[d]));
                const float gotv = attn_f16_to_f32(cache_v_row(c, slot, len0 + t, h)[d]);
                if (fabsf(got - want) > 1e-3f * (1.0f + fabsf(want)) ||
                    gotv != attn_f16_to_f32(attn_f32_to_f16(vn[(t * HKV + h) * D + d]))) {
                    fprintf(stderr, "decode_loop: slot %d key %lld head %d dim %d stored %g, want %g\n", slot,
                            (long long)(len0 + t), h, d, (double)got, (double)want);
                    exit(1);
                }
            }
        }
    for (i = 0; i < ln; i++)
        for (h = 0; h < HQ; h++) {
            const int64_t pos = len0 + i, nk = pos + 1; /* causal: keys 0..pos */
            const int hk = h / (HQ / HKV);
            double m = -INFINITY, l = 0.0;
            for (d = 0; d < D; d++) qd[d] = q[(i * HQ + h) * D + d];
            rotate(qd, pos);
            for (j = 0; j < nk; j++) {
                const uint16_t *kr = cache_k_row(c, slot, j, hk);
                double dot = 0.0;
                for (d = 0; d < D; d++) dot += qd[d] * attn_f16_to_f32(kr[d]);
                s[j] = dot / sqrt((double)D);
                if (s[j] > m) m = s[j];
            }
            for (j = 0; j < nk; j++) l += exp(s[j] - m);
            for (d = 0; d < D; d++) {
                double want = 0.0, err;
                for (j = 0; j < nk; j++) want += exp(s[j] - m) / l * attn_f16_to_f32(cache_v_row(c, slot, j, hk)[d]);
                err = fabs(o[(i * HQ + h) * D + d] - want);
                if (err > worst) worst = err;
            }
        }
    return worst;
}

/* One call over the slots (nb of them): ln new tokens each (their queries,
   keys and values drawn), stored and attended by the kernel, then checked. */
static double step(cache *c, const int *slots, int nb, int64_t ln)
{
    const size_t nq = (size_t)ln * HQ * D, nkv = (size_t)ln * HKV * D;
    float *q = (float *)malloc(nb * nq * sizeof(float)), *o = (float *)malloc(nb * nq * sizeof(float));
    float *kn = (float *)malloc(nb * nkv * sizeof(float)), *vn = (float *)malloc(nb * nkv * sizeof(float));
    int32_t table[SLOTS][MAXP], lens[SLOTS];
    attn_args a;
    attn_status st;
    double err, worst = 0.0;
    size_t e;
    int b;
    if (!q || !o || !kn || !vn) {
        fprintf(stderr, "decode_loop: out of memory\n");
        exit(1);
    }
    for (b = 0; b < nb; b++)
        if (!cache_reserve(c, slots[b], c->len[slots[b]] + ln)) {
            fprintf(stderr, "decode_loop: the pool has no page left\n");
            exit(1);
        }
    for (e = 0; e < nb * nq; e++) q[e] = draw();
    for (e = 0; e < nb * nkv; e++) kn[e] = draw();
    for (e = 0; e < nb * nkv; e++) vn[e] = draw();
    memset(&a, 0, sizeof a);
    a.batch = nb;
    a.seq_q = ln;
    cache_args(c, slots, nb, &a, table, lens);
    a.q = q;
    a.o = o;
    a.q_stride[0] = (int64_t)nq;
    a.q_stride[1] = HQ * D;
    a.q_stride[2] = D;
    memcpy(a.o_stride, a.q_stride, sizeof a.o_stride);
    a.k_new = kn; /* the new rows, in Q's type (f32), unrotated */
    a.v_new = vn;
    a.seq_new = ln;
    a.kn_stride[0] = (int64_t)nkv;
    a.kn_stride[1] = HKV * D;
    a.kn_stride[2] = D;
    memcpy(a.vn_stride, a.kn_stride, sizeof a.vn_stride);
    st = attn_decode_loop_fwd(&a); /* stores at keys len.., attends over len + ln keys */
    if (st != ATTN_OK) {
        fprintf(stderr, "decode_loop: %s\n", attn_status_string(st));
        exit(1);
    }
    for (b = 0; b < nb; b++) {
        err = check_call(c, slots[b], c->len[slots[b]], ln, q + b * nq, kn + b * nkv, vn + b * nkv, o + b * nq);
        if (err > worst) worst = err;
        c->len[slots[b]] += (int32_t)ln; /* the caller keeps the lengths */
    }
    cache_check_untouched(c);
    free(q);
    free(o);
    free(kn);
    free(vn);
    return worst;
}

int main(void)
{
    /* each sequence's prompt and final length */
    static const int prompt[SEQS] = { 5, 17, 30, 1, 60, 9, 40 }, total[SEQS] = { 20, 25, 45, 30, 70, 96, 50 };
    cache c;
    int next = 0, served = 0, steps = 0, slot;
    double worst = 0.0, err;

    cache_init(&c);
    while (served < SEQS) {
        int decoding[SLOTS], nd = 0;
        for (slot = 0; slot < SLOTS; slot++) {
            if (c.seq[slot] < 0 && next < SEQS) { /* admit: the prompt in one call */
                c.seq[slot] = next++;
                err = step(&c, &slot, 1, prompt[c.seq[slot]]);
                if (err > worst) worst = err;
            } else if (c.seq[slot] >= 0) {
                decoding[nd++] = slot;
            }
        }
        if (nd > 0) { /* one token for every sequence in flight, in one call */
            err = step(&c, decoding, nd, 1);
            if (err > worst) worst = err;
        }
        for (slot = 0; slot < SLOTS; slot++)
            if (c.seq[slot] >= 0 && c.len[slot] >= total[c.seq[slot]]) { /* retire: its pages back to the pool */
                served++;
                cache_release(&c, slot);
            }
        steps++;
    }
    printf("decode_loop: %d sequences in %d steps over %d slots and %d pages of %d keys, "
           "largest |O - plain loop| %.3g\n", SEQS, steps, SLOTS, PAGES, PAGE, worst);
    free(c.k);
    free(c.v);
    return worst < 1e-5 ? 0 : 1; /* f32 sums against double ones, over the same stored f16 rows */
}
