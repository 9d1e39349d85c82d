/*
 * ukernel.h - the micro-kernel testers (XNNPACK style), shared by the tests
 * tests/gen_ukernel_tests.lua writes for each generated kernel and the
 * runner, tests/ukernel_main.c; tests/ukernel.c defines them.
 *
 * Each generated test hands one micro-kernel (a qk, pv, dot, lanes, dpairs,
 * hpairs, qkdp, pvdp, spv, spvk, srescale, supd, sqk, sqbdot or qpackdp
 * function of the generated .c, found by parsing its name) with the shape
 * its name and its file give, and the storage type its name gives, to the
 * tester for its op.  The tester fills the inputs from a fixed-seed PRNG
 * (values in [-1, 1]; the kernel's reduced operand, if any, narrowed to its
 * bf16 or f16, and every operand of qkdp and pvdp to bf16, so what is
 * stored is exact), calls the kernel on several cases (strides,
 * layouts, key ranges), and checks it against plain double loops over the
 * stored values widened, that nothing around its outputs was written, that
 * its inputs were left alone, and that it read nothing past its inputs (the
 * last row of each input ends at a guard page; padding between rows holds
 * NaN of the row's type).  Each mismatch prints one line: kernel, index,
 * shape, got and expected.
 */
#ifndef ATTN_UKERNEL_H
#define ATTN_UKERNEL_H

#include <stdint.h>

#include "attn_runtime.h"

/* a micro-kernel's outcome */
enum { UKT_PASS = 0, UKT_FAIL = 1, UKT_NOT_RUN = 2 };

/* The micro-kernels' signatures (templates/lib/qk.c.tmpl, pv.c.tmpl,
 * dot.c.tmpl); the kernels' restrict qualifiers do not change their type.
 * The operand a storage type applies to (qk: A, pv: V, dot: K) is float for
 * ATTN_DTYPE_F32 and uint16_t for bf16 and f16 (the *16 types); every other
 * operand is f32 whatever the type. */
typedef void (*ukt_qk_fn)(const float *a, int64_t as, const float *b, float *c, int64_t cs);
typedef void (*ukt_qk16_fn)(const uint16_t *a, int64_t as, const float *b, float *c, int64_t cs);
/* the decode path's panel scores that also take rows to prefetch (qkpf: pr,
 * never NULL; f32 only) */
typedef void (*ukt_qkpf_fn)(const float *a, int64_t as, const float *b, float *c, int64_t cs,
                            const float *const *pr);
typedef void (*ukt_pv_fn)(const float *p, int64_t ps, int64_t pk, const float *v, int64_t vs, int64_t jlo,
                          int64_t jhi, float *o, const float *alpha);
typedef void (*ukt_pv16_fn)(const float *p, int64_t ps, int64_t pk, const uint16_t *v, int64_t vs, int64_t jlo,
                            int64_t jhi, float *o, const float *alpha);
/* a pv kernel that also takes the decode path's rows to prefetch (pr: NULL,
 * or nch * (jhi - jlo) lines, lpr a row; f32 only) */
typedef void (*ukt_pvpf_fn)(const float *p, int64_t ps, int64_t pk, const float *v, int64_t vs, int64_t jlo,
                            int64_t jhi, float *o, const float *alpha, const float *const *pr);
typedef void (*ukt_dot_fn)(const float *q, int64_t R, const float *k0, const float *k1, float *s0, float *s1);
typedef void (*ukt_dot16_fn)(const float *q, int64_t R, const uint16_t *k0, const uint16_t *k1, float *s0,
                             float *s1);
/* The blocked decode path's score kernels (lib/decode_scores.c.tmpl: lanes,
 * dpairs, hpairs): K in the storage type (dpairs and hpairs: f32 only), Q
 * packed, S^T out; with pr, the rows of the next block to prefetch (NULL or
 * npr rows). */
typedef void (*ukt_scores_fn)(const float *k0, int64_t ks, const float *q, float *s, int64_t rp);
typedef void (*ukt_scores16_fn)(const uint16_t *k0, int64_t ks, const float *q, float *s, int64_t rp);
typedef void (*ukt_scorespf_fn)(const float *k0, int64_t ks, const float *q, float *s, int64_t rp,
                                const float *const *pr);
/* The same kernels reading llama.cpp's blocks (q8_0: the *q8 types, q4_0:
 * *q4; strides in blocks). */
#define UKT_BLOCK_TYPES_(B, T)                                                                                   \
    typedef void (*ukt_qk##B##_fn)(const T *a, int64_t as, const float *b, float *c, int64_t cs);              \
    typedef void (*ukt_pv##B##_fn)(const float *p, int64_t ps, int64_t pk, const T *v, int64_t vs, int64_t jlo, \
                                   int64_t jhi, float *o, const float *alpha);                                 \
    typedef void (*ukt_dot##B##_fn)(const float *q, int64_t R, const T *k0, const T *k1, float *s0, float *s1); \
    typedef void (*ukt_scores##B##_fn)(const T *k0, int64_t ks, const float *q, float *s, int64_t rp);
UKT_BLOCK_TYPES_(q8, attn_block_q8_0)
UKT_BLOCK_TYPES_(q4, attn_block_q4_0)
#undef UKT_BLOCK_TYPES_
/* The pair dot product kernels (qk.c.tmpl and pv.c.tmpl with dp, matmul =
 * "bf16"): every operand but C, O and alpha is bf16 packed as pairs along
 * the reduction (qkdp: of head dims, pvdp: of keys); bf16 only. */
typedef void (*ukt_qkdp16_fn)(const uint16_t *a, int64_t as, const uint16_t *b, float *c, int64_t cs,
                              float scale);
typedef void (*ukt_pvdp16_fn)(const uint16_t *p, int64_t ps, int64_t pk, const uint16_t *v, int64_t vs,
                              int64_t jlo, int64_t jhi, float *o, const float *alpha);

/* The streaming decode path's P*V steps (lib/dot.c.tmpl, part "stream"):
 * spv, spvk and srescale take their weights in four-float registers, so
 * each test's file wraps one in this type: the weights (nk times 4 floats,
 * lane r for row r) loaded into registers, v the nk V rows (none for
 * srescale), O in place. */
typedef void (*ukt_spvk_fn)(const float *w, const void *const *v, float *o);
/* The softmax step and the score steps around it (the same file), wrapped
 * alike: supd takes the scores s (4 floats), the rows' running max m and sum
 * l (4 floats each), their O, and npend earlier keys' weights at pend (4
 * floats a key, rescaled in place with O); the weights come back in w.  sqk
 * takes packed Q rows, the nk K rows k[0..nk), terms (1: add at th, hide at
 * th + 4, 4 floats each; one key only), the state as supd, and returns the
 * nk keys' weights in w (4 floats a key); cap and icap: the softcap and its
 * inverse (base 2), for a kernel with the sc field. */
typedef void (*ukt_supd_fn)(const float *s, float *m, float *l, float *o, float *pend, int npend, float *w);
typedef void (*ukt_sqk_fn)(const float *q, const void *const *k, int terms, const float *th, float *m, float *l,
                           float *o, float *w, float cap, float icap);

/* The prefill's packing of a bf16 query row as pairs of head dims (qpackdp,
 * lib/pack_pairs.c.tmpl): src's D values, then zeros to a whole pair. */
typedef void (*ukt_qpackdp16_fn)(const uint16_t *src, uint16_t *dst);

/* A micro-kernel as the testers take it: one of the types above, converted
 * to this one; the tester converts it back to the type dt says before it
 * calls it (a generated test assigns the kernel to a variable of its own
 * type first, so its signature is checked). */
typedef void (*ukt_fn)(void);

/*
 * The testers: UKT_PASS or UKT_FAIL.  dt: the storage type of the operand
 * named above (ATTN_DTYPE_F32, ATTN_DTYPE_BF16 or ATTN_DTYPE_F16).
 *   qk:  C[m][n] = A[m][d] B[d][n], B's rows bs >= n columns apart (bs > n:
 *        a narrow instance, one vector of a wider panel: tested at its
 *        first columns and at its last); npr > 0: the kernel takes pr
 *        (ukt_qkpf_fn), lpr lines a row, and reads npr of its rows, no more
 *        (they sit before a guard page)
 *   pv:  O[m][dv] = alpha O + P[m][jlo:jhi] V[jlo:jhi][dv], O rows dvp apart;
 *        n: the Dv the kernel's name says, dv: the file's; nch > 0: the
 *        kernel takes pr (ukt_pvpf_fn) and reads ceil(nch (jhi - jlo) / lpr)
 *        of its rows, no more (they sit before a guard page): called with
 *        rows where P is key-major (the decode path's calls), NULL elsewhere
 *   dot: s0[r] = q_r . k0, s1[r] = q_r . k1 for R rows (multiples of m),
 *        q rows dqs apart; n: the keys the name says (2); also the block
 *        step's sqbdot (m rows, 4 lanes a key), through a wrapper of the dot
 *        type that calls it m rows at a time and makes a row's score NaN
 *        where a lane past its rows is not 0
 *   scores: s[i rp + r] = K row i . Q row r for keys i < m and rows r < rows,
 *        K rows ks elements apart; Q packed as Q^T, Q[r][d] at q[d qs + r]
 *        (pairs = 0: the lanes kernel, qs its panel's width), or in pairs of
 *        D, at q[(d / 2) (2 rows) + 2 r + d % 2] (pairs = 1: dpairs, hpairs;
 *        d even); npr > 0: the kernel takes pr (ukt_scorespf_fn), lpr lines
 *        a row, called with npr rows (before a guard page) and with NULL
 *   qkdp: C[m][n] = qscale A[m][d] B[d][n], A's rows ceil(d / 2) pairs of
 *        head dims (element d, for odd d, 0), B a panel of ceil(d / 2) rows
 *        of bs >= n pairs (B[d][col] at b[2 ((d / 2) bs + col) + d % 2]); qscale:
 *        the scale the kernel takes (its last argument; the config's scale
 *        times log2(e) where the prefill path calls it)
 *   spvk: O[r][c] += sum over keys k < nk of w[4 k + r] V_k[c] for rows r < m
 *        (m <= 4; lanes m..3 of the weights hold NaN, unused) and c < dv, O
 *        rows dvp apart (columns dv..dvp left as they were), each V row in
 *        dt ending at a guard page (spv: nk = 1); nk = 0 (srescale): O[r][c]
 *        *= w[r] for c < dvp
 *   supd: the lazy online-softmax step in double on 4 lanes: the max m moves
 *        (to max(m, s) lane by lane) when a lane's score passes it by more
 *        than 8, and then l, O's m rows (dvp columns) and the earlier weights
 *        are rescaled by 2^(m_old - m_new); w = 2^(s - m) (a max of -inf
 *        subtracts 0), added to l; cases: the max stays, moves, a first key
 *        (m = -inf, l = 0, a lane's score -inf)
 *   sqk: nk keys' scores q_r . k in double (lanes past m: 0), softcapped
 *        (sc: cap tanh(s icap), cap 1.5) and with terms (nk = 1), then the
 *        supd model key by key; Q scaled by a power of two so that every
 *        score is at most 1 in magnitude; i8: Q packed as idot's rows, the
 *        plain form and with dp_bit where the CPU has it; the supd cases
 *        (terms in the second and third)
 *   pvdp: O[m][dv] = alpha O + P[m][jlo:jhi] V[jlo:jhi][dv], jlo and jhi
 *        even, P(r, j) at p[r ps + j] (pk = 1), V as pairs of keys: the
 *        pair (j, j + 1) a row of dvp pairs at v + j vs (zero past dv),
 *        V[j + e][c] at its element 2 c + e; O rows dvp apart
 */
int ukt_qk(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int bs, int d, int npr, int lpr);
int ukt_pv(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int dv, int dvp, int nch, int lpr);
int ukt_dot(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int d, int dqs);
/* idot: the dot kernel of a matmul = "int8" config (the dot tester's shapes):
 * q rows packed q8_0 (qpacki, nb = d / 32: codes in bytes [0, d); at float
 * 8 nb + l minus the K codes' offset (128 q8_0, 8 q4_0) times the sum of
 * codes 4 l .. 4 l + 3, int32; at 16 nb + 8 b + i block b's scale; the flag
 * at 24 nb), s[r] = sum over blocks of scale times the codes' dot with the K
 * values; run with the flag 0, and with dp_bit where attn_cpu()->int8_dot
 * has it */
int ukt_idot(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int d, int dqs, int dp_bit);
int ukt_scores(const char *name, ukt_fn fn, attn_dtype dt, int m, int rows, int pairs, int qs, int d, int npr,
               int lpr);
int ukt_qkdp(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int bs, int d, float qscale);
int ukt_pvdp(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int dv, int dvp);
int ukt_spvk(const char *name, ukt_fn fn, attn_dtype dt, int m, int nk, int dv, int dvp);
/* qpackdp: dst[0..d) = src bit for bit, dst[d..2n) = 0 (n = ceil(d / 2)
 * pairs), nothing written around them, src left alone (ending at a guard page) */
int ukt_qpackdp(const char *name, ukt_fn fn, attn_dtype dt, int n, int d);
int ukt_supd(const char *name, ukt_fn fn, int m, int dv, int dvp);
int ukt_sqk(const char *name, ukt_fn fn, attn_dtype dt, int m, int nk, int d, int dqs, int dv, int dvp, int sc,
            int i8, int dp_bit);

/* Prints a micro-kernel's line and counts it: UKT_PASS in *passed, UKT_FAIL
 * in *failed, UKT_NOT_RUN in neither (shown with why, and in the totals per
 * ISA and per storage type). */
void ukt_record(const char *name, attn_isa isa, attn_dtype dt, int status, const char *why, int *passed,
                int *failed);

/* The runner's start (stdout line-buffered; a memory fault inside a kernel
 * made a failure of that kernel, not a crash) and end: the totals per ISA
 * and per storage type, then "N passed, N failed"; returns the exit status,
 * 1 on any failure or when nothing ran. */
void ukt_start(void);
int ukt_summary(int passed, int failed);

#endif
