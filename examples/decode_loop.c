/*
 * decode_loop.c - a user's serving loop over an attngen kernel: an f16 KV
 * cache of SLOTS sequences, each admitted with a prompt (one prefill call
 * that stores its keys and attends), then decoded one token a step (a
 * call that appends the token's K and V, rotated by RoPE inside the kernel,
 * and attends), retired at its length, and its slot given to the next
 * sequence.  Each call is checked against a plain loop written here (the
 * rotation, the f16 rounding of the stored rows, the softmax), and the
 * cache rows no sequence owns must stay as they were (NaN).
 *
 *   bin/attngen generate examples/decode_loop.lua -o build/examples
 *   cc -std=c99 -O2 -fopenmp -Iruntime -Ibuild/examples examples/decode_loop.c \
 *      build/examples/decode_loop.c runtime/attn_runtime.c -lm
 *
 * (make decode-loop does both and runs it.)  All access to the cache goes
 * through the cache_* functions below, so another layout (pages) changes
 * them and nothing else.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_loop.h"

#define KERNEL attn_decode_loop_kernel
#define SLOTS 3      /* sequences in flight */
#define CAP 96       /* the cache's keys per sequence */
#define SEQS 7       /* sequences served in all */
#define HQ 8
#define HKV 2
#define D 64
#define THETA 10000.0

/* ---- the cache: [SLOTS][CAP][HKV][D] f16 K and V, and each slot's length */

typedef struct {
    uint16_t *k, *v;
    int32_t len[SLOTS];
    int seq[SLOTS]; /* the sequence a slot serves, -1: free */
    int64_t high[SLOTS]; /* keys ever stored in a slot: past them the cache is still NaN */
} cache;

static size_t cache_index(int slot, int64_t j, int hk)
{
    return (((size_t)slot * CAP + (size_t)j) * HKV + (size_t)hk) * D;
}

static const uint16_t *cache_k_row(const cache *c, int slot, int64_t j, int hk) { return c->k + cache_index(slot, j, hk); }
static const uint16_t *cache_v_row(const cache *c, int slot, int64_t j, int hk) { return c->v + cache_index(slot, j, hk); }

/* The kernel's view of one slot: K and V from the slot's first key, its length. */
static void cache_args(cache *c, int slot, attn_args *a)
{
    a->seq_k = CAP;
    a->k = c->k + cache_index(slot, 0, 0);
    a->v = c->v + cache_index(slot, 0, 0);
    a->k_stride[0] = (int64_t)CAP * HKV * D;
    a->k_stride[1] = HKV * D;
    a->k_stride[2] = D;
    memcpy(a->v_stride, a->k_stride, sizeof a->v_stride);
    a->seqlens_k = &c->len[slot];
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
    double worst = 0.0, qd[D], kd[D], s[CAP];
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

/* One call on slot: Ln new tokens (their queries, keys and values drawn),
   stored and attended by the kernel, then checked. */
static double step(cache *c, int slot, int64_t ln)
{
    const size_t nq = (size_t)ln * HQ * D, nkv = (size_t)ln * HKV * D;
    float *q = (float *)malloc(nq * sizeof(float)), *o = (float *)malloc(nq * sizeof(float));
    float *kn = (float *)malloc(nkv * sizeof(float)), *vn = (float *)malloc(nkv * sizeof(float));
    const int64_t len0 = c->len[slot];
    attn_args a;
    attn_status st;
    size_t e;
    double err;
    if (!q || !o || !kn || !vn) {
        fprintf(stderr, "decode_loop: out of memory\n");
        exit(1);
    }
    for (e = 0; e < nq; e++) q[e] = draw();
    for (e = 0; e < nkv; e++) kn[e] = draw();
    for (e = 0; e < nkv; e++) vn[e] = draw();
    memset(&a, 0, sizeof a);
    a.batch = 1;
    a.seq_q = ln;
    cache_args(c, slot, &a);
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
    st = attn_decode_loop_fwd(&a); /* stores at keys len0.., attends over len0 + ln keys */
    if (st != ATTN_OK) {
        fprintf(stderr, "decode_loop: %s\n", attn_status_string(st));
        exit(1);
    }
    err = check_call(c, slot, len0, ln, q, kn, vn, o);
    if (len0 + ln > c->high[slot]) c->high[slot] = len0 + ln;
    for (e = cache_index(slot, c->high[slot], 0); e < cache_index(slot + 1, 0, 0); e++)
        if (c->k[e] != 0x7e00 || c->v[e] != 0x7e00) {
            fprintf(stderr, "decode_loop: slot %d: a row past its keys was written\n", slot);
            exit(1);
        }
    c->len[slot] += (int32_t)ln; /* the caller keeps the lengths */
    free(q);
    free(o);
    free(kn);
    free(vn);
    return err;
}

int main(void)
{
    /* each sequence's prompt and final length */
    static const int prompt[SEQS] = { 5, 17, 30, 1, 60, 9, 40 }, total[SEQS] = { 20, 25, 45, 30, 70, 96, 50 };
    const size_t n = (size_t)SLOTS * CAP * HKV * D;
    cache c;
    int next = 0, served = 0, steps = 0, slot;
    double worst = 0.0;
    size_t e;

    c.k = (uint16_t *)malloc(n * sizeof(uint16_t));
    c.v = (uint16_t *)malloc(n * sizeof(uint16_t));
    if (!c.k || !c.v) return 1;
    for (e = 0; e < n; e++) c.k[e] = c.v[e] = 0x7e00; /* NaN: rows no sequence owns */
    for (slot = 0; slot < SLOTS; slot++) {
        c.len[slot] = 0;
        c.seq[slot] = -1;
        c.high[slot] = 0;
    }
    while (served < SEQS) {
        for (slot = 0; slot < SLOTS; slot++) {
            double err;
            if (c.seq[slot] < 0 && next < SEQS) { /* admit: the prompt in one call */
                c.seq[slot] = next++;
                c.len[slot] = 0;
                err = step(&c, slot, prompt[c.seq[slot]]);
                if (err > worst) worst = err;
                continue;
            }
            if (c.seq[slot] < 0) continue;
            err = step(&c, slot, 1); /* one token */
            if (err > worst) worst = err;
            if (c.len[slot] >= total[c.seq[slot]]) { /* retire; its rows are left for the next one */
                served++;
                c.seq[slot] = -1;
            }
        }
        steps++;
    }
    printf("decode_loop: %d sequences in %d steps over %d slots, largest |O - plain loop| %.3g\n", SEQS, steps,
           SLOTS, worst);
    free(c.k);
    free(c.v);
    return worst < 1e-3 ? 0 : 1;
}
