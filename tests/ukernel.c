/*
 * ukernel.c - the micro-kernel testers (see ukernel.h) and the lines they
 * print.  Plain C99 + POSIX (no test framework), so the same source runs
 * natively on x86-64 and under qemu-user for AArch64.  The runner is
 * tests/ukernel_main.c.
 *
 * One line per micro-kernel, then (ukt_summary) a line per ISA, a line per
 * storage type of the kernels' operands, and last "N passed, N failed"
 * (micro-kernels).
 *
 * Storage types: the operand a kernel's name gives a type (qk: A, pv: V,
 * dot: K) is filled with random values narrowed to it (attn_f32_to_bf16,
 * attn_f32_to_f16), so the values stored are exact in the type; want is
 * computed from the stored values widened here (bf16: the top half of an
 * f32; f16: IEEE binary16), independently of the runtime and the kernels.
 * Padding between its rows holds a NaN of its type (bf16 0x7fc0, f16 0x7e00).
 *
 * Pair dot products (qkdp, pvdp: bf16 only): every operand but C, O and
 * alpha is bf16 packed as pairs along the reduction, laid out as the packers
 * write them (templates/lib/pack_pairs.c.tmpl); where the packers write zeros
 * that the kernels read (the half-empty last pair of an odd D, a V pair row
 * past Dv up to whole vectors) the testers write zeros too, and NaN only
 * where nothing may be read (between rows, keys outside the range).  The
 * tolerance below holds for them too: a product of two bf16 values is exact
 * in f32, so only the f32 sums (and qkdp's one multiply by its scale) round.
 *
 * Tolerance: |got - want| <= 1e-5 * (sum of |terms|) + 1e-6, want computed in
 * double.  The kernels accumulate in f32 in their own order (vector lanes,
 * unrolled partial sums, FMA), so the rounding error of a sum grows with the
 * magnitudes of its terms, not with its value (which may cancel to ~0); the
 * absolute 1e-6 covers sums of few, tiny terms.  A wrong or missing term is
 * ~1e-2 or more with inputs in [-1, 1], far outside it.  The same holds for
 * bf16 and f16 operands: the kernels widen them exactly and compute in f32,
 * so only the f32 arithmetic rounds.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ukernel.h"

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define REL_TOL 1e-5
#define ABS_TOL 1e-6
#define SEED 0x5eed1234abcdULL
#define PAD 16 /* canary floats before and after each output */
#define KEYS 11 /* keys of the P*V cases */
#define KEYS_DP 12 /* keys of the pvdp cases: 6 pairs */

/* ---- inputs and canaries ------------------------------------------------ */

static uint64_t rng;

static void reseed(unsigned salt) { rng = SEED + 0x9e3779b97f4a7c15ULL * (salt + 1); }

/* uniform in [-1, 1) */
static float rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

/* Around outputs and in input padding: a quiet NaN with a payload, so that a
 * kernel that reads it spreads NaN into its result, and one that writes over
 * it is seen bit for bit. */
#define CANARY_BITS 0x7fc5a5a5u

static float canary(void)
{
    const uint32_t bits = CANARY_BITS;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int is_canary(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits == CANARY_BITS;
}

/* ---- operands in a storage type (float, or uint16_t for bf16 and f16) --- */

#define BF16_NAN 0x7fc0u
#define F16_NAN 0x7e00u

static int dtype_known(attn_dtype dt)
{
    return dt == ATTN_DTYPE_F32 || dt == ATTN_DTYPE_BF16 || dt == ATTN_DTYPE_F16 || dt == ATTN_DTYPE_Q8_0 ||
           dt == ATTN_DTYPE_Q4_0;
}

/* Values an element of dt holds: 1, or 32 for llama.cpp's blocks (q8_0,
   q4_0).  The testers index operands by value, with strides in values that
   are multiples of 32 for a block type; the kernels take strides in elements
   (blocks), and memory holds units(dt, n) elements for n values. */
static int64_t vper(attn_dtype dt) { return (int64_t)attn_dtype_values(dt); }
static size_t units(attn_dtype dt, size_t n) { return n / (size_t)vper(dt); }

static size_t elem_size(attn_dtype dt)
{
    return dt == ATTN_DTYPE_F32 ? sizeof(float) : vper(dt) > 1 ? attn_dtype_size(dt) : sizeof(uint16_t);
}

/* exact widening, written out here rather than taken from the runtime */
static double widen_bf16(uint16_t h)
{
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static double widen_f16(uint16_t h)
{
    const int e = (h >> 10) & 31, mant = h & 1023;
    const double mag = e == 0 ? ldexp(mant, -24) : e == 31 ? (mant ? NAN : INFINITY) : ldexp(1024 + mant, e - 25);
    return h & 0x8000u ? -mag : mag;
}

/* element i of an operand of type dt, widened */
static double elem(attn_dtype dt, const void *p, size_t i)
{
    if (dt == ATTN_DTYPE_Q8_0) { /* value i: code i % 32 of block i / 32 times its scale */
        const attn_block_q8_0 *b = (const attn_block_q8_0 *)p + i / 32;
        return (double)b->q[i % 32] * widen_f16(b->d);
    }
    if (dt == ATTN_DTYPE_Q4_0) { /* values 0-15 in the low nibbles, 16-31 in the high ones */
        const attn_block_q4_0 *b = (const attn_block_q4_0 *)p + i / 32;
        const int j = (int)(i % 32), code = j < 16 ? (b->q[j] & 15) : (b->q[j - 16] >> 4);
        return (double)(code - 8) * widen_f16(b->d);
    }
    if (dt == ATTN_DTYPE_F32) return ((const float *)p)[i];
    if (dt == ATTN_DTYPE_BF16) return widen_bf16(((const uint16_t *)p)[i]);
    return widen_f16(((const uint16_t *)p)[i]);
}

/* element i := a random value narrowed to dt (so exact in dt) */
static void put_rnd(attn_dtype dt, void *p, size_t i)
{
    const float x = rnd();
    /* a block type: a random code, and the block's scale a power of two
       from its index (so every value is exact in f32) */
    const uint16_t scale = attn_f32_to_f16(ldexpf(1.0f, -3 - (int)(i / 32 % 4)));
    const int code = (int)(x * 40.0f);
    if (dt == ATTN_DTYPE_Q8_0) {
        attn_block_q8_0 *b = (attn_block_q8_0 *)p + i / 32;
        b->d = scale;
        b->q[i % 32] = (int8_t)(code < -127 ? -127 : code > 127 ? 127 : code);
        return;
    }
    if (dt == ATTN_DTYPE_Q4_0) {
        attn_block_q4_0 *b = (attn_block_q4_0 *)p + i / 32;
        const int j = (int)(i % 32), c = (code % 16 + 16) % 16;
        b->d = scale;
        if (j < 16) b->q[j] = (uint8_t)((b->q[j] & 0xF0) | c);
        else b->q[j - 16] = (uint8_t)((b->q[j - 16] & 0x0F) | (c << 4));
        return;
    }
    if (dt == ATTN_DTYPE_F32) ((float *)p)[i] = x;
    else ((uint16_t *)p)[i] = dt == ATTN_DTYPE_BF16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
}

/* element i := padding that poisons a result it reaches: a NaN of dt */
static void put_nan(attn_dtype dt, void *p, size_t i)
{
    if (vper(dt) > 1) { /* a block type: the block's scale NaN (padding is whole blocks) */
        uint16_t *d = (uint16_t *)(void *)((unsigned char *)p + i / 32 * attn_dtype_size(dt));
        *d = (uint16_t)F16_NAN;
        return;
    }
    if (dt == ATTN_DTYPE_F32) ((float *)p)[i] = canary();
    else ((uint16_t *)p)[i] = (uint16_t)(dt == ATTN_DTYPE_BF16 ? BF16_NAN : F16_NAN);
}

/* n elements of size bytes that end at a PROT_NONE page: a read past the
 * last one faults. */
typedef struct {
    void *map;
    size_t len;
    void *p;
} guarded;

static void *guarded_alloc(guarded *g, size_t n, size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t data = (n * size + page - 1) / page * page;
    g->len = data + page;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED || mprotect((char *)g->map + data, page, PROT_NONE) != 0) {
        perror("ukernel tests: mmap/mprotect");
        exit(2);
    }
    g->p = (char *)g->map + data - n * size;
    return g->p;
}

static void guarded_free(guarded *g) { munmap(g->map, g->len); }

/* n floats, all canaries, with PAD canaries before: returns the first of the n */
static float *canary_alloc(size_t n)
{
    float *b = malloc((n + 2 * PAD) * sizeof(float));
    size_t i;
    if (!b) {
        fprintf(stderr, "ukernel tests: out of memory\n");
        exit(2);
    }
    for (i = 0; i < n + 2 * PAD; i++) b[i] = canary();
    return b + PAD;
}

static void canary_free(float *p) { free(p - PAD); }

/* a copy of n elements of size bytes */
static void *copy_of(const void *p, size_t n, size_t size)
{
    void *c = malloc(n * size + 1);
    if (!c) {
        fprintf(stderr, "ukernel tests: out of memory\n");
        exit(2);
    }
    memcpy(c, p, n * size);
    return c;
}

/* ---- a memory fault inside a kernel is a failure, not a crash ----------- */

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t fault_armed;

static void on_fault(int sig)
{
    if (fault_armed) {
        fault_armed = 0;
        siglongjmp(fault_jmp, sig);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_faults(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* Each call converts fn back to the kernel's type (dt says which) and
 * returns 0, or the signal of a fault inside the kernel. */
static int call_qk(ukt_fn fn, attn_dtype dt, const void *a, int64_t as, const float *b, float *c, int64_t cs,
                   const float *const *pr)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        if (pr) ((ukt_qkpf_fn)fn)((const float *)a, as, b, c, cs, pr);
        else if (dt == ATTN_DTYPE_F32) ((ukt_qk_fn)fn)((const float *)a, as, b, c, cs);
        else if (dt == ATTN_DTYPE_Q8_0) ((ukt_qkq8_fn)fn)((const attn_block_q8_0 *)a, as, b, c, cs);
        else if (dt == ATTN_DTYPE_Q4_0) ((ukt_qkq4_fn)fn)((const attn_block_q4_0 *)a, as, b, c, cs);
        else ((ukt_qk16_fn)fn)((const uint16_t *)a, as, b, c, cs);
        fault_armed = 0;
    }
    return sig;
}

static int call_pv(ukt_fn fn, attn_dtype dt, const float *p, int64_t ps, int64_t pk, const void *v, int64_t vs,
                   int64_t jlo, int64_t jhi, float *o, const float *alpha, int pf, const float *const *pr)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        if (pf) ((ukt_pvpf_fn)fn)(p, ps, pk, (const float *)v, vs, jlo, jhi, o, alpha, pr);
        else if (dt == ATTN_DTYPE_F32) ((ukt_pv_fn)fn)(p, ps, pk, (const float *)v, vs, jlo, jhi, o, alpha);
        else if (dt == ATTN_DTYPE_Q8_0)
            ((ukt_pvq8_fn)fn)(p, ps, pk, (const attn_block_q8_0 *)v, vs, jlo, jhi, o, alpha);
        else if (dt == ATTN_DTYPE_Q4_0)
            ((ukt_pvq4_fn)fn)(p, ps, pk, (const attn_block_q4_0 *)v, vs, jlo, jhi, o, alpha);
        else ((ukt_pv16_fn)fn)(p, ps, pk, (const uint16_t *)v, vs, jlo, jhi, o, alpha);
        fault_armed = 0;
    }
    return sig;
}

static int call_dot(ukt_fn fn, attn_dtype dt, const float *q, int64_t R, const void *k0, const void *k1, float *s0,
                    float *s1)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        if (dt == ATTN_DTYPE_F32) ((ukt_dot_fn)fn)(q, R, (const float *)k0, (const float *)k1, s0, s1);
        else if (dt == ATTN_DTYPE_Q8_0)
            ((ukt_dotq8_fn)fn)(q, R, (const attn_block_q8_0 *)k0, (const attn_block_q8_0 *)k1, s0, s1);
        else if (dt == ATTN_DTYPE_Q4_0)
            ((ukt_dotq4_fn)fn)(q, R, (const attn_block_q4_0 *)k0, (const attn_block_q4_0 *)k1, s0, s1);
        else ((ukt_dot16_fn)fn)(q, R, (const uint16_t *)k0, (const uint16_t *)k1, s0, s1);
        fault_armed = 0;
    }
    return sig;
}

static int call_scores(ukt_fn fn, attn_dtype dt, const void *k0, int64_t ks, const float *q, float *s, int64_t rp,
                       int pf, const float *const *pr)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        if (pf) ((ukt_scorespf_fn)fn)((const float *)k0, ks, q, s, rp, pr);
        else if (dt == ATTN_DTYPE_F32) ((ukt_scores_fn)fn)((const float *)k0, ks, q, s, rp);
        else if (dt == ATTN_DTYPE_Q8_0) ((ukt_scoresq8_fn)fn)((const attn_block_q8_0 *)k0, ks, q, s, rp);
        else if (dt == ATTN_DTYPE_Q4_0) ((ukt_scoresq4_fn)fn)((const attn_block_q4_0 *)k0, ks, q, s, rp);
        else ((ukt_scores16_fn)fn)((const uint16_t *)k0, ks, q, s, rp);
        fault_armed = 0;
    }
    return sig;
}

static int call_qkdp(ukt_fn fn, const uint16_t *a, int64_t as, const uint16_t *b, float *c, int64_t cs,
                     float scale)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_qkdp16_fn)fn)(a, as, b, c, cs, scale);
        fault_armed = 0;
    }
    return sig;
}

static int call_pvdp(ukt_fn fn, const uint16_t *p, int64_t ps, const uint16_t *v, int64_t vs, int64_t jlo,
                     int64_t jhi, float *o, const float *alpha)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_pvdp16_fn)fn)(p, ps, 1, v, vs, jlo, jhi, o, alpha);
        fault_armed = 0;
    }
    return sig;
}

/* ---- checks ------------------------------------------------------------- */

/* the case being run, for failure lines: "M = 8, N = 32, D = 59, as = 62, cs = 37" */
static char shape[256];
static int cases_run;

/* one mismatch line per case, then a count of the others */
static int mismatches;

static int within(double got, double want, double bound)
{
    return fabs(got - want) <= REL_TOL * bound + ABS_TOL; /* false for NaN */
}

static void mismatch(const char *name, const char *what, float got, double want, double bound)
{
    if (mismatches++ == 0)
        printf("FAIL %s: %s = %.9g, expected %.9g (tolerance %.3g) with %s\n", name, what, (double)got, want,
               REL_TOL * bound + ABS_TOL, shape);
}

static void canary_hit(const char *name, const char *what, long i, float got)
{
    if (mismatches++ == 0)
        printf("FAIL %s: wrote %.9g at %s + %ld, outside its output, with %s\n", name, (double)got, what, i, shape);
}

/* the canaries before (at -PAD..-1) and after (n..n+PAD-1) an output */
static void check_pads(const char *name, const char *what, const float *out, long n)
{
    long i;
    for (i = -PAD; i < 0; i++)
        if (!is_canary(out[i])) canary_hit(name, what, i, out[i]);
    for (i = n; i < n + PAD; i++)
        if (!is_canary(out[i])) canary_hit(name, what, i, out[i]);
}

/* n elements of size bytes, bit for bit */
static void check_input(const char *name, const char *what, const void *now, const void *was, size_t n, size_t size)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (memcmp((const char *)now + i * size, (const char *)was + i * size, size) != 0) {
            if (mismatches++ == 0)
                printf("FAIL %s: changed its input %s at %zu with %s\n", name, what, i, shape);
            return;
        }
}

static void fault(const char *name, int sig)
{
    if (mismatches++ == 0)
        printf("FAIL %s: signal %d (a read or write outside its buffers) with %s\n", name, sig, shape);
}

/* a type the testers do not know: a failure, not a guess at the layout */
static int unknown_dtype(const char *name, attn_dtype dt)
{
    printf("FAIL %s: no tester for storage type %d (%s)\n", name, (int)dt, attn_dtype_name(dt));
    return UKT_FAIL;
}

/* after a case: 1 when it passed (the first failure is printed already) */
static int case_done(const char *name)
{
    cases_run++;
    if (mismatches > 1) printf("FAIL %s: ... and %d more in this case\n", name, mismatches - 1);
    return mismatches == 0;
}

/* ---- qk: C[m][n] = A[m][d] B[d][n], A in dt, B's rows bs apart ---------- */

int ukt_qk(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int bs, int d, int npr, int lpr)
{
    /* strides: A rows and C rows with room between them, B from its panel's
       first column; then packed tight, B from its panel's last n columns */
    static const int extra[2][2] = { { 3, 5 }, { 0, 0 } };
    const char *tn = attn_dtype_name(dt);
    size_t es;
    int ok = 1, k;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    if (npr > 0 && (dt != ATTN_DTYPE_F32 || lpr < 1)) {
        printf("FAIL %s: a kernel with rows to prefetch takes f32 A and lines a row (%d)\n", name, lpr);
        return UKT_FAIL;
    }
    es = elem_size(dt);
    for (k = 0; k < 2; k++) {
        const int64_t as = d + extra[k][0] * vper(dt), cs = n + extra[k][1];
        const size_t na = (size_t)((m - 1) * as + d), nb = (size_t)d * bs, nc = (size_t)((m - 1) * cs + n);
        const int bo = k == 0 ? 0 : bs - n; /* the first column the kernel reads */
        guarded ga, gb, gr;
        void *a = guarded_alloc(&ga, units(dt, na), es), *a0;
        float *b = guarded_alloc(&gb, nb, sizeof(float)), *c = canary_alloc(nc), *b0;
        /* the rows to prefetch: exactly as many as the decode path hands over,
           any readable lines (a prefetch never faults) */
        const float **pr = guarded_alloc(&gr, (size_t)(npr > 0 ? npr : 0), sizeof(const float *));
        int r, col, sig;
        long i;
        for (i = 0; i < npr; i++) pr[i] = b; /* lpr lines of b: D floats, within its d * bs */
        reseed((unsigned)k);
        for (i = 0; i < (long)na; i++) { /* NaN between rows */
            if ((i % as) < d) put_rnd(dt, a, (size_t)i);
            else put_nan(dt, a, (size_t)i);
        }
        for (i = 0; i < (long)nb; i++) b[i] = rnd();
        a0 = copy_of(a, units(dt, na), es);
        b0 = copy_of(b, nb, sizeof(float));
        snprintf(shape, sizeof shape, "M = %d, N = %d of %d from %d, D = %d, A %s, as = %ld, cs = %ld", m, n, bs, bo,
                 d, tn, (long)as, (long)cs);
        mismatches = 0;
        sig = call_qk(fn, dt, a, as / vper(dt), b + bo, c, cs, npr > 0 ? pr : NULL);
        if (sig) fault(name, sig);
        else {
            for (r = 0; r < m; r++)
                for (col = 0; col < n; col++) {
                    double want = 0.0, bound = 0.0;
                    int dd;
                    for (dd = 0; dd < d; dd++) {
                        const double t = elem(dt, a, (size_t)(r * as + dd)) * (double)b[dd * bs + bo + col];
                        want += t;
                        bound += fabs(t);
                    }
                    if (!within(c[r * cs + col], want, bound)) {
                        char what[64];
                        snprintf(what, sizeof what, "c[%d][%d]", r, col);
                        mismatch(name, what, c[r * cs + col], want, bound);
                    }
                }
            /* between rows (columns n..cs-1), before and after */
            for (r = 0; r + 1 < m; r++)
                for (col = n; col < cs; col++)
                    if (!is_canary(c[r * cs + col])) canary_hit(name, "c", (long)(r * cs + col), c[r * cs + col]);
            check_pads(name, "c", c, (long)nc);
            check_input(name, "a", a, a0, units(dt, na), es);
            check_input(name, "b", b, b0, nb, sizeof(float));
        }
        ok &= case_done(name);
        free(a0);
        free(b0);
        guarded_free(&ga);
        guarded_free(&gb);
        guarded_free(&gr);
        canary_free(c);
    }
    snprintf(shape, sizeof shape, "%dx%d, A %s, D = %d%s: %d cases", m, n, tn, d, npr > 0 ? ", rows to prefetch" : "",
             cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- pv: O[m][dv] = alpha O + P[m][jlo:jhi] V[jlo:jhi][dv], V in dt ------ */

/* The operands of a P*V case, as its term function reads them. */
typedef struct {
    attn_dtype dt;    /* V's storage type (P is f32, or bf16 for pvdp) */
    const void *p;
    int64_t ps, pk;
    const void *v;
    int64_t vs;
} pv_operands;

/* P(r, j) V(j, c) of pv: P f32 at p[r * ps + j * pk], V rows vs elements apart */
static double pv_term(const pv_operands *x, int r, int j, int c)
{
    return (double)((const float *)x->p)[r * x->ps + j * x->pk] * elem(x->dt, x->v, (size_t)(j * x->vs + c));
}

/* P(r, j) V(j, c) of pvdp: bf16 P at p[r * ps + j]; V as pairs of keys, the
 * pair (j, j + 1), j even, a row of pairs at v + j * vs */
static double pvdp_term(const pv_operands *x, int r, int j, int c)
{
    const uint16_t *p = (const uint16_t *)x->p, *v = (const uint16_t *)x->v;
    return widen_bf16(p[r * x->ps + j]) * widen_bf16(v[(j - j % 2) * x->vs + 2 * c + j % 2]);
}

/* Checks O[r][c] = alpha[r] O0[r][c] + sum over [jlo, jhi) of term(r, j, c)
 * for the m rows and dv columns of O (rows dvp apart; columns dv..dvp may
 * hold anything), each within the bound of its terms' magnitudes. */
static void check_pv(const char *name, int m, int dv, int dvp, int jlo, int jhi, const float *alpha,
                     const float *o0, const float *o, double (*term)(const pv_operands *, int, int, int),
                     const pv_operands *x)
{
    int r, c, j;
    for (r = 0; r < m; r++)
        for (c = 0; c < dv; c++) {
            double want = (double)alpha[r] * (double)o0[r * dvp + c];
            double bound = fabs(want);
            for (j = jlo; j < jhi; j++) {
                const double t = term(x, r, j, c);
                want += t;
                bound += fabs(t);
            }
            if (!within(o[r * dvp + c], want, bound)) {
                char what[64];
                snprintf(what, sizeof what, "o[%d][%d]", r, c);
                mismatch(name, what, o[r * dvp + c], want, bound);
            }
        }
}

int ukt_pv(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int dv, int dvp, int nch, int lpr)
{
    /* key ranges: all, a middle part, the last key alone, none */
    static const int range[4][2] = { { 0, KEYS }, { 3, KEYS - 2 }, { KEYS - 1, KEYS }, { 5, 5 } };
    const int64_t vs = dv + (vper(dt) > 1 ? vper(dt) : 7);
    const char *tn = attn_dtype_name(dt);
    size_t es;
    int ok = 1, layout, rg;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    es = elem_size(dt);
    if (n != dv) {
        printf("FAIL %s: its name says Dv = %d, its file's DV is %d\n", name, n, dv);
        return UKT_FAIL;
    }
    if (nch > 0 && (dt != ATTN_DTYPE_F32 || lpr < 1)) {
        printf("FAIL %s: a kernel with rows to prefetch takes f32 V and lines a row (%d)\n", name, lpr);
        return UKT_FAIL;
    }
    for (layout = 0; layout < 2; layout++)
        for (rg = 0; rg < 4; rg++) {
            /* P row-major (the prefill path: ps = keys, pk = 1) or key-major (decode: ps = 1, pk = rows) */
            const int64_t ps = layout == 0 ? KEYS : 1, pk = layout == 0 ? 1 : m;
            const int jlo = range[rg][0], jhi = range[rg][1];
            /* V: rows 0..jhi-1, the last ending at the guard; none for an empty range */
            const int vrows = jhi > jlo ? jhi : 0;
            const size_t np = (size_t)((m - 1) * ps + (KEYS - 1) * pk + 1);
            const size_t nv = vrows > 0 ? (size_t)((vrows - 1) * vs + dv) : 0, no = (size_t)m * dvp;
            /* the rows to prefetch (key-major P only): as many as the decode path hands
               over for these keys, any readable lines (a prefetch never faults) */
            const size_t npr = nch > 0 && layout == 1 ? (size_t)((nch * (jhi - jlo) + lpr - 1) / lpr) : 0;
            guarded gp, gv, ga, gr;
            float *p = guarded_alloc(&gp, np, sizeof(float)), *alpha = guarded_alloc(&ga, (size_t)m, sizeof(float));
            const float **pr = guarded_alloc(&gr, npr, sizeof(const float *));
            void *v = guarded_alloc(&gv, units(dt, nv), es), *v0;
            float *o = canary_alloc(no), *o0, *p0, *alpha0;
            int r, j, sig;
            long i;
            reseed((unsigned)(10 + layout * 4 + rg));
            for (r = 0; r < m; r++)
                for (j = 0; j < KEYS; j++) /* NaN outside the key range */
                    p[r * ps + j * pk] = j >= jlo && j < jhi ? rnd() : canary();
            for (i = 0; i < (long)nv; i++) { /* NaN outside the key range and between rows */
                const long row = i / vs;
                if (row >= jlo && row < jhi && i % vs < dv) put_rnd(dt, v, (size_t)i);
                else put_nan(dt, v, (size_t)i);
            }
            for (r = 0; r < m; r++) alpha[r] = rnd();
            for (i = 0; i < (long)npr; i++) pr[i] = alpha + i % m;
            for (i = 0; i < (long)no; i++) o[i] = rnd(); /* columns dv..dvp too: the kernel scales them */
            o0 = copy_of(o, no, sizeof(float));
            p0 = copy_of(p, np, sizeof(float));
            v0 = copy_of(v, units(dt, nv), es);
            alpha0 = copy_of(alpha, (size_t)m, sizeof(float));
            snprintf(shape, sizeof shape,
                     "M = %d, Dv = %d, DVP = %d, V %s, vs = %ld, P %s (ps = %ld, pk = %ld), keys %d..%d", m, dv, dvp,
                     tn, (long)vs, layout == 0 ? "row-major" : "key-major", (long)ps, (long)pk, jlo, jhi);
            mismatches = 0;
            sig = call_pv(fn, dt, p, ps, pk, v, vs / vper(dt), jlo, jhi, o, alpha, nch > 0, npr > 0 ? pr : NULL);
            if (sig) fault(name, sig);
            else {
                const pv_operands x = { dt, p, ps, pk, v, vs };
                check_pv(name, m, dv, dvp, jlo, jhi, alpha, o0, o, pv_term, &x);
                check_pads(name, "o", o, (long)no);
                check_input(name, "p", p, p0, np, sizeof(float));
                check_input(name, "v", v, v0, units(dt, nv), es);
                check_input(name, "alpha", alpha, alpha0, (size_t)m, sizeof(float));
            }
            ok &= case_done(name);
            free(o0);
            free(p0);
            free(v0);
            free(alpha0);
            guarded_free(&gp);
            guarded_free(&gv);
            guarded_free(&ga);
            guarded_free(&gr);
            canary_free(o);
        }
    snprintf(shape, sizeof shape, "%dx%d, V %s, DVP = %d, vs = %ld%s: %d cases", m, n, tn, dvp, (long)vs,
             nch > 0 ? ", rows to prefetch" : "", cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- dot: s0[r] = q_r . k0, s1[r] = q_r . k1, k0 and k1 in dt ----------- */

/* the widest head dim the dot testers take (the schema's) */
#define UKT_MAX_D 1024 /* shared_kv head dims go up to 1024 */

/* A dot kernel's row r: s0 and s1 against q . k0 and q . k1 in double, q the
   row's d values as the kernel multiplies them (a mismatch line where they
   differ). */
static void dot_row_agrees(const char *name, attn_dtype dt, int r, float s0, float s1, const double *q, const void *k0,
                           const void *k1, int d)
{
    double w0 = 0.0, w1 = 0.0, b0 = 0.0, b1 = 0.0;
    char what[64];
    int dd;
    for (dd = 0; dd < d; dd++) {
        const double t0 = q[dd] * elem(dt, k0, (size_t)dd), t1 = q[dd] * elem(dt, k1, (size_t)dd);
        w0 += t0;
        w1 += t1;
        b0 += fabs(t0);
        b1 += fabs(t1);
    }
    if (!within(s0, w0, b0)) {
        snprintf(what, sizeof what, "s0[%d]", r);
        mismatch(name, what, s0, w0, b0);
    }
    if (!within(s1, w1, b1)) {
        snprintf(what, sizeof what, "s1[%d]", r);
        mismatch(name, what, s1, w1, b1);
    }
}

/* A dot kernel's case after the call: the outputs' pads and the inputs unchanged. */
static void dot_io_unchanged(const char *name, const float *s0, const float *s1, long R, const float *q, const float *q0,
                             size_t nq, const void *k0, const void *k00, const void *k1, const void *k10, size_t nk,
                             size_t es)
{
    check_pads(name, "s0", s0, R);
    check_pads(name, "s1", s1, R);
    check_input(name, "q", q, q0, nq, sizeof(float));
    check_input(name, "k0", k0, k00, nk, es);
    check_input(name, "k1", k1, k10, nk, es);
}

int ukt_dot(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int d, int dqs)
{
    const char *tn = attn_dtype_name(dt);
    size_t es;
    int ok = 1, k;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    es = elem_size(dt);
    if (n != 2 || d > UKT_MAX_D) {
        printf("FAIL %s: no tester for %d keys (the dot kernels take k0, k1) or D = %d\n", name, n, d);
        return UKT_FAIL;
    }
    for (k = 1; k <= 2; k++) {
        const int R = k * m;
        const size_t nq = (size_t)R * dqs;
        guarded gq, gk0, gk1;
        float *q = guarded_alloc(&gq, nq, sizeof(float)), *q0;
        void *k0 = guarded_alloc(&gk0, units(dt, (size_t)d), es), *k1 = guarded_alloc(&gk1, units(dt, (size_t)d), es);
        void *k00, *k10;
        float *s0 = canary_alloc((size_t)R), *s1 = canary_alloc((size_t)R);
        double qrow[UKT_MAX_D];
        int r, dd, sig;
        long i;
        reseed((unsigned)(20 + k));
        for (i = 0; i < (long)nq; i++) q[i] = i % dqs < d ? rnd() : 0.0f; /* packed rows: zero past D */
        for (i = 0; i < d; i++) put_rnd(dt, k0, (size_t)i);
        for (i = 0; i < d; i++) put_rnd(dt, k1, (size_t)i);
        q0 = copy_of(q, nq, sizeof(float));
        k00 = copy_of(k0, units(dt, (size_t)d), es);
        k10 = copy_of(k1, units(dt, (size_t)d), es);
        snprintf(shape, sizeof shape, "R = %d, D = %d, DQS = %d, K %s", R, d, dqs, tn);
        mismatches = 0;
        sig = call_dot(fn, dt, q, R, k0, k1, s0, s1);
        if (sig) fault(name, sig);
        else {
            for (r = 0; r < R; r++) {
                for (dd = 0; dd < d; dd++) qrow[dd] = (double)q[r * dqs + dd];
                dot_row_agrees(name, dt, r, s0[r], s1[r], qrow, k0, k1, d);
            }
            dot_io_unchanged(name, s0, s1, R, q, q0, nq, k0, k00, k1, k10, units(dt, (size_t)d), es);
        }
        ok &= case_done(name);
        free(q0);
        free(k00);
        free(k10);
        guarded_free(&gq);
        guarded_free(&gk0);
        guarded_free(&gk1);
        canary_free(s0);
        canary_free(s1);
    }
    snprintf(shape, sizeof shape, "%dx%d, K %s, D = %d, DQS = %d: %d cases", m, n, tn, d, dqs, cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- idot: the dot kernel of matmul = "int8" (integer block dots) ------ */

/* a random integer in [lo, hi] */
static int rnd_int(int lo, int hi)
{
    const double u = ((double)rnd() + 1.0) / 2.0; /* [0, 1) */
    int x = lo + (int)(u * (double)(hi - lo + 1));
    return x > hi ? hi : x;
}

/* Packs row r of R q8_0 query rows as the kernel's qpacki does (ukernel.h)
   for K codes offset by off (the unsigned form of vpdpbusd): codes in
   [-127, 127] (the first block of row 0 all at the extremes), block scales in
   [2^-10, 2^-4) of either sign, the corrections, and the flag dp. */
static void idot_row(float *row, int d, int r, int off, int32_t dp)
{
    const int nb = d / 32;
    int8_t *codes = (int8_t *)(void *)row;
    int b, i;
    for (b = 0; b < nb; b++) {
        const float f = ldexpf(rnd(), -4 - rnd_int(0, 5));
        for (i = 0; i < 32; i++)
            codes[32 * b + i] = (int8_t)(r == 0 && b == 0 ? (i % 2 ? -127 : 127) : rnd_int(-127, 127));
        for (i = 0; i < 8; i++) {
            const int8_t *c = codes + 32 * b + 4 * i;
            const int32_t n = -off * (c[0] + c[1] + c[2] + c[3]);
            memcpy(row + 8 * nb + 8 * b + i, &n, sizeof n);
            row[16 * nb + 8 * b + i] = f;
        }
    }
    memcpy(row + 24 * nb, &dp, sizeof dp);
}

/* A K row of d values in blocks of dt: random f16 scales, every code value
   (q8_0: -127..127, the first block at the extremes; q4_0: any byte). */
static void idot_krow(attn_dtype dt, void *k, int d)
{
    int b, i;
    for (b = 0; b < d / 32; b++) {
        const uint16_t scale = attn_f32_to_f16(ldexpf(rnd(), -2 - rnd_int(0, 6)));
        if (dt == ATTN_DTYPE_Q8_0) {
            attn_block_q8_0 *x = (attn_block_q8_0 *)k + b;
            x->d = scale;
            for (i = 0; i < 32; i++) x->q[i] = (int8_t)(b == 0 ? (i % 3 ? 127 : -127) : rnd_int(-127, 127));
        } else {
            attn_block_q4_0 *x = (attn_block_q4_0 *)k + b;
            x->d = scale;
            for (i = 0; i < 16; i++) x->q[i] = (uint8_t)(b == 0 ? (i % 2 ? 0x0F : 0xF0) : rnd_int(0, 255));
        }
    }
}

int ukt_idot(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int d, int dqs, int dp_bit)
{
    const char *tn = attn_dtype_name(dt);
    const int dp_have = dp_bit != 0 && (attn_cpu()->int8_dot & dp_bit) != 0;
    const size_t es = elem_size(dt);
    int ok = 1, k, dp;
    cases_run = 0;
    if (dt != ATTN_DTYPE_Q8_0 && dt != ATTN_DTYPE_Q4_0) return unknown_dtype(name, dt);
    if (n != 2 || m != 4 || d % 32 != 0 || dqs < d || d > UKT_MAX_D) {
        printf("FAIL %s: no int8 tester for %dx%d, D = %d, DQS = %d\n", name, m, n, d, dqs);
        return UKT_FAIL;
    }
    /* the plain form, then the extension's where the CPU has it; 4, 8 and 12 rows (the helpers
       take 8 rows a call on ISAs with 32 registers: one call, and one call and 4 rows) */
    for (dp = 0; dp <= dp_have; dp++)
        for (k = 1; k <= 3; k++) {
            const int R = k * m;
            const size_t nq = (size_t)R * dqs, nk = units(dt, (size_t)d);
            guarded gq, gk0, gk1;
            float *q = guarded_alloc(&gq, nq, sizeof(float)), *q0;
            void *k0 = guarded_alloc(&gk0, nk, es), *k1 = guarded_alloc(&gk1, nk, es);
            void *k00, *k10;
            float *s0 = canary_alloc((size_t)R), *s1 = canary_alloc((size_t)R);
            double qrow[UKT_MAX_D];
            int r, dd, sig;
            reseed((unsigned)(40 + 2 * k + dp));
            memset(q, 0, nq * sizeof(float));
            for (r = 0; r < R; r++)
                idot_row(q + (size_t)r * dqs, d, r, dt == ATTN_DTYPE_Q8_0 ? 128 : 8, dp ? dp_bit : 0);
            idot_krow(dt, k0, d);
            idot_krow(dt, k1, d);
            q0 = copy_of(q, nq, sizeof(float));
            k00 = copy_of(k0, nk, es);
            k10 = copy_of(k1, nk, es);
            snprintf(shape, sizeof shape, "R = %d, D = %d, DQS = %d, K %s, %s", R, d, dqs, tn,
                     dp ? "the dot-product extension" : "the plain form");
            mismatches = 0;
            sig = call_dot(fn, dt, q, R, k0, k1, s0, s1);
            if (sig) fault(name, sig);
            else {
                for (r = 0; r < R; r++) {
                    const float *row = q + (size_t)r * dqs;
                    const int8_t *codes = (const int8_t *)(const void *)row;
                    for (dd = 0; dd < d; dd++) /* a code times its block's scale */
                        qrow[dd] = (double)codes[dd] * (double)row[16 * (d / 32) + 8 * (dd / 32)];
                    dot_row_agrees(name, dt, r, s0[r], s1[r], qrow, k0, k1, d);
                }
                dot_io_unchanged(name, s0, s1, R, q, q0, nq, k0, k00, k1, k10, nk, es);
            }
            ok &= case_done(name);
            free(q0);
            free(k00);
            free(k10);
            guarded_free(&gq);
            guarded_free(&gk0);
            guarded_free(&gk1);
            canary_free(s0);
            canary_free(s1);
        }
    snprintf(shape, sizeof shape, "%dx%d int8, K %s, D = %d, DQS = %d: %d cases%s", m, n, tn, d, dqs, cases_run,
             dp_bit == 0 ? "" : dp_have ? " (both forms)" : " (this CPU lacks the extension: the plain form)");
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- scores: the decode path's S^T = K Q^T, Q packed along the lanes ---- */

/* Q[r][dd] in a scores kernel's packing (ukernel.h) */
static size_t scores_q_at(int pairs, int rows, int qs, int r, int dd)
{
    return pairs ? (size_t)((dd / 2) * 2 * rows + 2 * r + dd % 2) : (size_t)(dd * qs + r);
}

/* Checks s against plain loops over the m keys at k (rows ks apart) and Q. */
static void scores_check(const char *name, attn_dtype dt, const void *k, int64_t ks, const float *q, const float *s,
                         int64_t rp, int m, int rows, int pairs, int qs, int d)
{
    int i, r, dd;
    for (i = 0; i < m; i++)
        for (r = 0; r < rows; r++) {
            double want = 0.0, bound = 0.0;
            for (dd = 0; dd < d; dd++) {
                const double t = elem(dt, k, (size_t)(i * ks + dd)) * (double)q[scores_q_at(pairs, rows, qs, r, dd)];
                want += t;
                bound += fabs(t);
            }
            if (!within(s[i * rp + r], want, bound)) {
                char what[64];
                snprintf(what, sizeof what, "s[%d][%d]", i, r);
                mismatch(name, what, s[i * rp + r], want, bound);
            }
        }
    for (i = 0; i + 1 < m; i++) /* between the keys' rows */
        for (r = rows; r < rp; r++)
            if (!is_canary(s[i * rp + r])) canary_hit(name, "s", (long)(i * rp + r), s[i * rp + r]);
}

int ukt_scores(const char *name, ukt_fn fn, attn_dtype dt, int m, int rows, int pairs, int qs, int d, int npr,
               int lpr)
{
    /* strides: K rows and S rows with room between them (NaN between K rows);
       then packed tight; where the kernel takes rows to prefetch, the first
       case hands it npr rows and the second NULL */
    static const int extra[2][2] = { { 3, 5 }, { 0, 0 } };
    const char *tn = attn_dtype_name(dt);
    const size_t nq = pairs ? (size_t)(d / 2) * 2 * (size_t)rows : (size_t)(d - 1) * qs + (size_t)rows;
    size_t es;
    int ok = 1, k;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    if ((npr > 0 && (dt != ATTN_DTYPE_F32 || lpr < 1)) || (pairs && (d % 2 != 0 || dt != ATTN_DTYPE_F32))) {
        printf("FAIL %s: pairs of D take an f32 K and an even D (%d), rows to prefetch f32 K and lines a row (%d)\n",
               name, d, lpr);
        return UKT_FAIL;
    }
    es = elem_size(dt);
    for (k = 0; k < 2; k++) {
        const int64_t ks = d + extra[k][0] * vper(dt), rp = rows + extra[k][1];
        const size_t nk = (size_t)((m - 1) * ks + d), ns = (size_t)((m - 1) * rp + rows);
        const int pf = npr > 0, with_rows = pf && k == 0;
        guarded gk, gq, gr;
        void *kk = guarded_alloc(&gk, units(dt, nk), es), *k0;
        float *q = guarded_alloc(&gq, nq, sizeof(float)), *s = canary_alloc(ns), *q0;
        const float **pr = guarded_alloc(&gr, (size_t)(with_rows ? npr : 0), sizeof(const float *));
        int sig;
        long i;
        reseed((unsigned)(40 + k));
        for (i = 0; i < npr && with_rows; i++) pr[i] = q; /* any readable lines (a prefetch never faults) */
        for (i = 0; i < (long)nk; i++) { /* NaN between rows */
            if ((i % ks) < d) put_rnd(dt, kk, (size_t)i);
            else put_nan(dt, kk, (size_t)i);
        }
        for (i = 0; i < (long)nq; i++) q[i] = rnd();
        k0 = copy_of(kk, units(dt, nk), es);
        q0 = copy_of(q, nq, sizeof(float));
        snprintf(shape, sizeof shape, "M = %d keys, %d rows, D = %d, K %s, ks = %ld, rp = %ld, %s%s", m, rows, d, tn,
                 (long)ks, (long)rp, pairs ? "Q in pairs of D" : "Q^T", with_rows ? ", rows to prefetch" : "");
        mismatches = 0;
        sig = call_scores(fn, dt, kk, ks / vper(dt), q, s, rp, pf, with_rows ? pr : NULL);
        if (sig) fault(name, sig);
        else {
            scores_check(name, dt, kk, ks, q, s, rp, m, rows, pairs, qs, d);
            check_pads(name, "s", s, (long)ns);
            check_input(name, "k", kk, k0, units(dt, nk), es);
            check_input(name, "q", q, q0, nq, sizeof(float));
        }
        ok &= case_done(name);
        free(k0);
        free(q0);
        guarded_free(&gk);
        guarded_free(&gq);
        guarded_free(&gr);
        canary_free(s);
    }
    snprintf(shape, sizeof shape, "%d keys x %d rows, K %s, D = %d%s: %d cases", m, rows, tn, d,
             npr > 0 ? ", rows to prefetch" : "", cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- qkdp: C[m][n] = qscale A[m][d] B[d][n] in bf16 pairs of head dims --- */

int ukt_qkdp(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int bs, int d, float qscale)
{
    /* strides: A rows (odd: pairs not 4-byte aligned) and C rows with room
     * between them, B from its panel's first pair; then packed tight (the
     * prefill path's as = 2 P), B from its panel's last n pairs */
    static const int extra[2][2] = { { 3, 5 }, { 0, 0 } };
    const int pairs = (d + 1) / 2, w = 2 * pairs; /* pairs, elements of a row of A */
    int ok = 1, k;
    cases_run = 0;
    if (dt != ATTN_DTYPE_BF16) return unknown_dtype(name, dt);
    for (k = 0; k < 2; k++) {
        const int64_t as = w + extra[k][0], cs = n + extra[k][1];
        const size_t na = (size_t)((m - 1) * as + w), nb = (size_t)w * bs, nc = (size_t)((m - 1) * cs + n);
        const int bo = k == 0 ? 0 : bs - n; /* the first pair of a panel row the kernel reads */
        guarded ga, gb;
        uint16_t *a = guarded_alloc(&ga, na, sizeof(uint16_t)), *b = guarded_alloc(&gb, nb, sizeof(uint16_t));
        uint16_t *a0, *b0;
        float *c = canary_alloc(nc);
        int r, col, dd, sig;
        long i;
        reseed((unsigned)(30 + k));
        for (i = 0; i < (long)na; i++) { /* zero in the half-empty last pair (odd d), NaN between rows */
            if (i % as < d) put_rnd(dt, a, (size_t)i);
            else if (i % as < w) a[i] = 0;
            else put_nan(dt, a, (size_t)i);
        }
        for (dd = 0; dd < w; dd++) /* B[dd][col] at b[2 ((dd / 2) bs + col) + dd % 2], zero for dd = d */
            for (col = 0; col < bs; col++) {
                const size_t at = (size_t)(2 * ((dd / 2) * bs + col) + dd % 2);
                if (dd < d) put_rnd(dt, b, at);
                else b[at] = 0;
            }
        a0 = copy_of(a, na, sizeof(uint16_t));
        b0 = copy_of(b, nb, sizeof(uint16_t));
        snprintf(shape, sizeof shape,
                 "M = %d, N = %d of %d from %d, D = %d (%d pairs), scale %.9g, A, B bf16, as = %ld, cs = %ld", m, n,
                 bs, bo, d, pairs, (double)qscale, (long)as, (long)cs);
        mismatches = 0;
        sig = call_qkdp(fn, a, as, b + 2 * bo, c, cs, qscale);
        if (sig) fault(name, sig);
        else {
            for (r = 0; r < m; r++)
                for (col = 0; col < n; col++) {
                    double want = 0.0, bound = 0.0;
                    for (dd = 0; dd < d; dd++) {
                        const double t = widen_bf16(a[r * as + dd]) *
                                         widen_bf16(b[2 * ((dd / 2) * bs + bo + col) + dd % 2]);
                        want += t;
                        bound += fabs(t);
                    }
                    want *= (double)qscale;
                    bound *= fabs((double)qscale);
                    if (!within(c[r * cs + col], want, bound)) {
                        char what[64];
                        snprintf(what, sizeof what, "c[%d][%d]", r, col);
                        mismatch(name, what, c[r * cs + col], want, bound);
                    }
                }
            for (r = 0; r + 1 < m; r++)
                for (col = n; col < cs; col++)
                    if (!is_canary(c[r * cs + col])) canary_hit(name, "c", (long)(r * cs + col), c[r * cs + col]);
            check_pads(name, "c", c, (long)nc);
            check_input(name, "a", a, a0, na, sizeof(uint16_t));
            check_input(name, "b", b, b0, nb, sizeof(uint16_t));
        }
        ok &= case_done(name);
        free(a0);
        free(b0);
        guarded_free(&ga);
        guarded_free(&gb);
        canary_free(c);
    }
    snprintf(shape, sizeof shape, "%dx%d, bf16 pairs, D = %d, scale %.9g: %d cases", m, n, d, (double)qscale,
             cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- pvdp: O[m][dv] = alpha O + P[m][jlo:jhi] V[jlo:jhi][dv] in bf16 pairs of keys */

int ukt_pvdp(const char *name, ukt_fn fn, attn_dtype dt, int m, int n, int dv, int dvp)
{
    /* key ranges, even: all, a middle part, the last pair alone, none */
    static const int range[4][2] = { { 0, KEYS_DP }, { 2, KEYS_DP - 4 }, { KEYS_DP - 2, KEYS_DP }, { 6, 6 } };
    /* strides: P rows and V's pair rows with room between them, then as the
     * prefill path passes them (ps = the tile's keys, vs = dvp) */
    static const int extra[2][2] = { { 3, 3 }, { 0, 0 } };
    int ok = 1, layout, rg;
    cases_run = 0;
    if (dt != ATTN_DTYPE_BF16) return unknown_dtype(name, dt);
    if (n != dv) {
        printf("FAIL %s: its name says Dv = %d, its file's DV is %d\n", name, n, dv);
        return UKT_FAIL;
    }
    for (layout = 0; layout < 2; layout++)
        for (rg = 0; rg < 4; rg++) {
            const int64_t ps = KEYS_DP + extra[layout][0], vs = dvp + extra[layout][1];
            const int jlo = range[rg][0], jhi = range[rg][1];
            /* V: the pairs of keys 0..jhi-1, rows of 2 vs elements, the last
             * pair's dvp pairs ending at the guard; none for an empty range */
            const size_t np = (size_t)((m - 1) * ps + KEYS_DP);
            const size_t nv = jhi > jlo ? (size_t)((jhi - 2) * vs + 2 * dvp) : 0, no = (size_t)m * dvp;
            guarded gp, gv, ga;
            uint16_t *p = guarded_alloc(&gp, np, sizeof(uint16_t)), *v = guarded_alloc(&gv, nv, sizeof(uint16_t));
            uint16_t *p0, *v0;
            float *alpha = guarded_alloc(&ga, (size_t)m, sizeof(float));
            float *o = canary_alloc(no), *o0, *alpha0;
            int r, sig;
            long i;
            reseed((unsigned)(40 + layout * 4 + rg));
            for (i = 0; i < (long)np; i++) { /* NaN outside the key range and between rows */
                const long key = i % ps;
                if (key >= jlo && key < jhi) put_rnd(dt, p, (size_t)i);
                else put_nan(dt, p, (size_t)i);
            }
            for (i = 0; i < (long)nv; i++) {
                /* element e of pair row q: V[2 q + e % 2][e / 2] for e < 2 dv;
                 * zero to 2 dvp (whole vectors of it are read, the packer
                 * writes zeros); NaN between pair rows and before jlo */
                const long q = i / (2 * vs), e = i % (2 * vs);
                if (e >= 2 * dvp || 2 * q < jlo) put_nan(dt, v, (size_t)i);
                else if (e < 2 * dv) put_rnd(dt, v, (size_t)i);
                else v[i] = 0;
            }
            for (r = 0; r < m; r++) alpha[r] = rnd();
            for (i = 0; i < (long)no; i++) o[i] = rnd(); /* columns dv..dvp too: the kernel scales them */
            o0 = copy_of(o, no, sizeof(float));
            p0 = copy_of(p, np, sizeof(uint16_t));
            v0 = copy_of(v, nv, sizeof(uint16_t));
            alpha0 = copy_of(alpha, (size_t)m, sizeof(float));
            snprintf(shape, sizeof shape,
                     "M = %d, Dv = %d, DVP = %d, P, V bf16 pairs of keys, ps = %ld, vs = %ld, keys %d..%d", m, dv,
                     dvp, (long)ps, (long)vs, jlo, jhi);
            mismatches = 0;
            sig = call_pvdp(fn, p, ps, v, vs, jlo, jhi, o, alpha);
            if (sig) fault(name, sig);
            else {
                const pv_operands x = { ATTN_DTYPE_BF16, p, ps, 1, v, vs };
                check_pv(name, m, dv, dvp, jlo, jhi, alpha, o0, o, pvdp_term, &x);
                check_pads(name, "o", o, (long)no);
                check_input(name, "p", p, p0, np, sizeof(uint16_t));
                check_input(name, "v", v, v0, nv, sizeof(uint16_t));
                check_input(name, "alpha", alpha, alpha0, (size_t)m, sizeof(float));
            }
            ok &= case_done(name);
            free(o0);
            free(p0);
            free(v0);
            free(alpha0);
            guarded_free(&gp);
            guarded_free(&gv);
            guarded_free(&ga);
            canary_free(o);
        }
    snprintf(shape, sizeof shape, "%dx%d, bf16 pairs of keys, DVP = %d: %d cases", m, n, dvp, cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- the run ------------------------------------------------------------ */

/* passed, failed, not run: per ISA, per storage type */
static int per_isa[ATTN_ISA_COUNT][3], per_dtype[ATTN_DTYPE_COUNT][3];

void ukt_record(const char *name, attn_isa isa, attn_dtype dt, int status, const char *why, int *passed,
                int *failed)
{
    if (status == UKT_PASS) {
        printf("ok      %s (%s)\n", name, shape);
        ++*passed;
    } else if (status == UKT_FAIL) {
        printf("FAILED  %s\n", name);
        ++*failed;
    } else {
        printf("not run %s: %s\n", name, why ? why : "(no reason given)");
    }
    if ((int)isa >= 0 && (int)isa < ATTN_ISA_COUNT && status >= 0 && status <= 2) per_isa[isa][status]++;
    if ((int)dt >= 0 && (int)dt < ATTN_DTYPE_COUNT && status >= 0 && status <= 2) per_dtype[dt][status]++;
    fflush(stdout);
}

void ukt_start(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    catch_faults();
}

int ukt_summary(int passed, int failed)
{
    int not_run = 0, i;
    for (i = 0; i < ATTN_ISA_COUNT; i++) {
        const int *n = per_isa[i];
        if (n[0] + n[1] + n[2] > 0)
            printf("%s: %d micro-kernels passed, %d failed, %d not run\n", attn_isa_name((attn_isa)i), n[0], n[1],
                   n[2]);
        not_run += n[2];
    }
    for (i = 0; i < ATTN_DTYPE_COUNT; i++) {
        const int *n = per_dtype[i];
        if (n[0] + n[1] + n[2] > 0)
            printf("%s operands: %d micro-kernels passed, %d failed, %d not run\n", attn_dtype_name((attn_dtype)i),
                   n[0], n[1], n[2]);
    }
    if (not_run > 0) printf("%d micro-kernels not run (see 'not run' above)\n", not_run);
    if (passed + failed == 0) printf("no micro-kernel ran\n");
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0 || passed + failed == 0;
}

/* ---- spvk: the streaming decode's P*V steps, weights in four-float lanes -- */

#define UKT_MAX_NK 8 /* keys a step takes at most */

static int call_spvk(ukt_fn fn, const float *w, const void *const *v, float *o)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_spvk_fn)fn)(w, v, o);
        fault_armed = 0;
    }
    return sig;
}

/* O[r][c] against o0 plus the weighted V rows (nk > 0), or o0 times lane r of
 * the weights (nk = 0: every column up to dvp) */
static void check_spvk(const char *name, attn_dtype dt, int m, int nk, int dv, int dvp, const float *w,
                       const void *const *v, const float *o0, const float *o)
{
    int r, c, k;
    for (r = 0; r < m; r++)
        for (c = 0; c < dvp; c++) {
            double want = (double)o0[r * dvp + c], bound;
            if (nk == 0) want *= (double)w[r];
            bound = fabs(want);
            for (k = 0; k < nk && c < dv; k++) {
                const double t = (double)w[4 * k + r] * elem(dt, v[k], (size_t)c);
                want += t;
                bound += fabs(t);
            }
            if (!within(o[r * dvp + c], want, bound)) {
                char what[64];
                snprintf(what, sizeof what, "o[%d][%d]", r, c);
                mismatch(name, what, o[r * dvp + c], want, bound);
            }
        }
}

int ukt_spvk(const char *name, ukt_fn fn, attn_dtype dt, int m, int nk, int dv, int dvp)
{
    const char *tn = attn_dtype_name(dt);
    const size_t no = (size_t)m * (size_t)dvp, nw = 4 * (size_t)(nk > 0 ? nk : 1);
    int ok = 1, rep;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    if (m < 1 || m > 4 || nk < 0 || nk > UKT_MAX_NK || dv < 1 || dvp < dv || dv % vper(dt) != 0) {
        printf("FAIL %s: no tester for %d rows, %d keys, Dv = %d, DVP = %d\n", name, m, nk, dv, dvp);
        return UKT_FAIL;
    }
    for (rep = 0; rep < 2; rep++) {
        guarded gv[UKT_MAX_NK], gw;
        const void *vr[UKT_MAX_NK];
        void *v0[UKT_MAX_NK];
        float *w = guarded_alloc(&gw, nw, sizeof(float)), *o = canary_alloc(no), *o0, *w0;
        const size_t nv = units(dt, (size_t)dv);
        int k, sig;
        long i;
        reseed((unsigned)(40 + rep));
        for (i = 0; i < (long)nw; i++) w[i] = i % 4 < m ? rnd() : canary(); /* lanes past the rows: unused */
        for (k = 0; k < nk; k++) { /* each V row ends at its guard page */
            void *v = guarded_alloc(&gv[k], nv, elem_size(dt));
            for (i = 0; i < dv; i++) put_rnd(dt, v, (size_t)i);
            vr[k] = v;
            v0[k] = copy_of(v, nv, elem_size(dt));
        }
        for (i = 0; i < (long)no; i++) o[i] = rnd(); /* columns dv..dvp too: they must stay */
        o0 = copy_of(o, no, sizeof(float));
        w0 = copy_of(w, nw, sizeof(float));
        snprintf(shape, sizeof shape, "M = %d, %d key%s, Dv = %d, DVP = %d, V %s, case %d", m, nk, nk == 1 ? "" : "s",
                 dv, dvp, tn, rep);
        mismatches = 0;
        sig = call_spvk(fn, w, vr, o);
        if (sig) fault(name, sig);
        else {
            check_spvk(name, dt, m, nk, dv, dvp, w, vr, o0, o);
            check_pads(name, "o", o, (long)no);
            check_input(name, "w", w, w0, nw, sizeof(float));
            for (k = 0; k < nk; k++) check_input(name, "v", vr[k], v0[k], nv, elem_size(dt));
        }
        ok &= case_done(name);
        for (k = 0; k < nk; k++) {
            free(v0[k]);
            guarded_free(&gv[k]);
        }
        free(o0);
        free(w0);
        guarded_free(&gw);
        canary_free(o);
    }
    snprintf(shape, sizeof shape, "%dx%d, V %s, Dv = %d, DVP = %d: %d cases", m, nk, tn, dv, dvp, cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- supd, sqk: the streaming decode's softmax step, and its scores ---- */

#define UKT_LAZY_MAX 8.0 /* the running max moves past a score by more (generator/planner/sdpa.lua) */
#define UKT_NEG_BIG (-3.0e38) /* a max below it is a row that has seen nothing: it subtracts 0 */

/* a running max as the step subtracts it */
static double mref(double m) { return m < UKT_NEG_BIG ? 0.0 : m; }

/* The step (lib/dot's supd) in double on 4 lanes: the scores s move the
   running max m (when one passes it by more than UKT_LAZY_MAX; O's rows < rows,
   dvp columns, and the npend earlier weights at pend rescaled), add their
   weights 2^(s - m) to l and return them in w. */
static void supd_model(const double *s, double *m, double *l, double *o, int rows, int dvp, double *pend,
                       int npend, double *w)
{
    int i, moved = 0;
    for (i = 0; i < 4; i++) moved |= s[i] > m[i] + UKT_LAZY_MAX;
    if (moved) {
        double alpha[4];
        int k;
        for (i = 0; i < 4; i++) {
            const double mn = s[i] > m[i] ? s[i] : m[i];
            alpha[i] = exp2(m[i] - mref(mn));
            l[i] *= alpha[i];
            m[i] = mn;
        }
        for (i = 0; i < rows * dvp; i++) o[i] *= alpha[i / dvp];
        for (k = 0; k < 4 * npend; k++) pend[k] *= alpha[k % 4];
    }
    for (i = 0; i < 4; i++) {
        w[i] = exp2(s[i] - mref(m[i]));
        l[i] += w[i];
    }
}

/* n floats against the model's doubles, each within e times its magnitude (m: plus e) */
static void step_agrees(const char *name, const char *what, const float *got, const double *want, int n, double e,
                        int absolute)
{
    int i;
    for (i = 0; i < n; i++) {
        const double bound = fabs(want[i]) * e + (absolute ? e : 0.0);
        if (isinf(want[i]) ? got[i] != (float)want[i] : !within(got[i], want[i], bound)) {
            char at[64];
            snprintf(at, sizeof at, "%s[%d]", what, i);
            mismatch(name, at, got[i], want[i], bound);
        }
    }
}

/* the state a step case starts from, a copy as the model's doubles, and the checks after it */
typedef struct {
    float m[4], l[4], *o, w[4 * UKT_MAX_NK], pend[4 * UKT_MAX_NK];
    double dm[4], dl[4], *dobuf, dw[4 * UKT_MAX_NK], dpend[4 * UKT_MAX_NK];
} step_case;

static void step_open(step_case *c, int rows, int dvp)
{
    int i;
    c->o = canary_alloc((size_t)rows * dvp);
    c->dobuf = malloc((size_t)rows * dvp * sizeof(double));
    if (!c->dobuf) {
        fprintf(stderr, "ukernel tests: out of memory\n");
        exit(2);
    }
    for (i = 0; i < rows * dvp; i++) c->dobuf[i] = c->o[i] = rnd();
    for (i = 0; i < 4; i++) {
        c->dm[i] = c->m[i];
        c->dl[i] = c->l[i];
    }
}

/* m, l, O, the nw weights at w and the npend at pend against the model, e the relative bound */
static void step_close(step_case *c, const char *name, int rows, int dvp, int nw, int npend, double e, int check)
{
    double *dob = c->dobuf;
    float *of = c->o;
    int i;
    if (!check) { /* the kernel faulted */
        free(c->dobuf);
        canary_free(c->o);
        return;
    }
    step_agrees(name, "m", c->m, c->dm, 4, e, 1);
    step_agrees(name, "l", c->l, c->dl, 4, e, 0);
    step_agrees(name, "w", c->w, c->dw, nw, e, 0);
    step_agrees(name, "pend", c->pend, c->dpend, 4 * npend, e, 0);
    for (i = 0; i < rows * dvp; i++)
        if (!within(of[i], dob[i], fabs(dob[i]) * e)) {
            char at[64];
            snprintf(at, sizeof at, "o[%d][%d]", i / dvp, i % dvp);
            mismatch(name, at, of[i], dob[i], fabs(dob[i]) * e);
        }
    check_pads(name, "o", of, (long)rows * dvp);
    free(c->dobuf);
    canary_free(c->o);
}

static int call_supd(ukt_fn fn, const float *s, step_case *c, int npend)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_supd_fn)fn)(s, c->m, c->l, c->o, c->pend, npend, c->w);
        fault_armed = 0;
    }
    return sig;
}

int ukt_supd(const char *name, ukt_fn fn, int m, int dv, int dvp)
{
    /* the cases: no lane's score passes the max by 8; lane 0's does (2 earlier
       weights rescaled); the first key (max -inf, sum 0; lane 1 hidden: -inf) */
    static const char *const what[3] = { "the max stays", "lane 0 moves the max", "the first key" };
    int ok = 1, rep;
    cases_run = 0;
    if (m < 1 || m > 4 || dv < 1 || dvp < dv) {
        printf("FAIL %s: no tester for %d rows, Dv = %d, DVP = %d\n", name, m, dv, dvp);
        return UKT_FAIL;
    }
    for (rep = 0; rep < 3; rep++) {
        step_case c;
        const int npend = rep == 1 ? 2 : rep == 2 ? 1 : 0;
        float s[4];
        double ds[4];
        int i, sig;
        reseed((unsigned)(60 + rep));
        for (i = 0; i < 4; i++) {
            c.m[i] = rep == 2 ? -INFINITY : 4.0f * rnd();
            c.l[i] = rep == 2 ? 0.0f : 1.5f + rnd();
            s[i] = rep == 2 ? (i == 1 ? -INFINITY : 4.0f * rnd()) : c.m[i] + 6.0f * rnd();
        }
        if (rep == 1) s[0] = c.m[0] + 10.0f + rnd();
        for (i = 0; i < 4 * npend; i++) c.dpend[i] = c.pend[i] = 1.0f + rnd();
        for (i = 0; i < 4; i++) ds[i] = s[i];
        step_open(&c, m, dvp);
        snprintf(shape, sizeof shape, "M = %d, DVP = %d, %s", m, dvp, what[rep]);
        mismatches = 0;
        supd_model(ds, c.dm, c.dl, c.dobuf, m, dvp, c.dpend, npend, c.dw);
        sig = call_supd(fn, s, &c, npend);
        if (sig) fault(name, sig);
        step_close(&c, name, m, dvp, 4, npend, 1.0, !sig);
        ok &= case_done(name);
    }
    snprintf(shape, sizeof shape, "%dx1, Dv = %d, DVP = %d: %d cases", m, dv, dvp, cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

static int call_sqk(ukt_fn fn, const float *q, const void *const *k, int terms, const float *th, step_case *c,
                    float cap, float icap)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_sqk_fn)fn)(q, k, terms, th, c->m, c->l, c->o, c->w, cap, icap);
        fault_armed = 0;
    }
    return sig;
}

/* qv[r][dd]: the values the kernel multiplies of q's rows (i8: a code times its block's scale) */
static void sqk_values(const float *q, double *qv, int rows, int d, int dqs, int i8)
{
    const int nb = d / 32;
    int r, dd;
    for (r = 0; r < rows; r++) {
        const float *row = q + (size_t)r * dqs;
        const int8_t *codes = (const int8_t *)(const void *)row;
        for (dd = 0; dd < d; dd++)
            qv[(size_t)r * d + dd] = i8 ? (double)codes[dd] * (double)row[16 * nb + 8 * (dd / 32)] : row[dd];
    }
}

/* The q rows of an sqk case: f32 values (i8 = 0, zero past d) or packed q8_0
   (ukernel.h's idot; flag dp), scaled by a power of two so that no score
   passes 1 in magnitude (the lazy max's decisions then lie far from its
   threshold); qv as sqk_values. */
static void sqk_rows(float *q, double *qv, attn_dtype dt, int rows, int d, int dqs, int i8, int32_t dp,
                     const void *const *k, int nk)
{
    double big = 0.0;
    int r, dd, j, e = 0;
    memset(q, 0, (size_t)rows * dqs * sizeof(float));
    for (r = 0; r < rows; r++) {
        if (i8) idot_row(q + (size_t)r * dqs, d, r, dt == ATTN_DTYPE_Q8_0 ? 128 : 8, dp);
        else
            for (dd = 0; dd < d; dd++) q[(size_t)r * dqs + dd] = rnd();
    }
    sqk_values(q, qv, rows, d, dqs, i8);
    for (r = 0; r < rows; r++)
        for (j = 0; j < nk; j++) {
            double t = 0.0;
            for (dd = 0; dd < d; dd++) t += fabs(qv[(size_t)r * d + dd] * elem(dt, k[j], (size_t)dd));
            if (t > big) big = t;
        }
    while (ldexp(big, -e) > 1.0) e++;
    for (r = 0; r < rows; r++) { /* f32 values, or i8 block scales (8 copies a block), times 2^-e */
        float *x = q + (size_t)r * dqs + (i8 ? 16 * (d / 32) : 0);
        for (j = 0; j < (i8 ? 8 * (d / 32) : d); j++) x[j] = ldexpf(x[j], -e);
    }
    sqk_values(q, qv, rows, d, dqs, i8);
}

/* The scores of an sqk case in double (lanes past rows 0), softcapped (cap >
   0), with terms (add, and -inf where hide is); sb: each one's error scale. */
static void sqk_scores(double *s, double *sb, const double *qv, attn_dtype dt, int rows, int d, const void *const *k,
                       int nk, float cap, float icap, int terms, const float *th)
{
    int kk, i, dd;
    for (kk = 0; kk < nk; kk++)
        for (i = 0; i < 4; i++) {
            double t = 0.0, b = 0.0;
            for (dd = 0; dd < d && i < rows; dd++) {
                const double x = qv[(size_t)i * d + dd] * elem(dt, k[kk], (size_t)dd);
                t += x;
                b += fabs(x);
            }
            if (cap > 0.0f) {
                t = (double)cap * tanh(t * (double)icap);
                b += (double)cap;
            }
            if (terms) {
                t = th[4 + i] < 0.0f ? -INFINITY : t + (double)th[i];
                b += fabs((double)th[i]);
            }
            s[4 * kk + i] = t;
            sb[4 * kk + i] = b;
        }
}

/* an sqk case's state: the max stays (below each lane's top score by 2); lane
   0 moves it (12 below key 0's); the first key (max -inf, sum 0) */
static void sqk_state(step_case *c, const double *s, int nk, int rep)
{
    int i, kk;
    for (i = 0; i < 4; i++) {
        double top = -INFINITY;
        for (kk = 0; kk < nk; kk++) top = s[4 * kk + i] > top ? s[4 * kk + i] : top;
        c->m[i] = rep == 2 ? -INFINITY : (float)(top - 2.0);
        c->l[i] = rep == 2 ? 0.0f : 1.5f + rnd();
    }
    if (rep == 1) c->m[0] = (float)(s[0] - 12.0);
}

int ukt_sqk(const char *name, ukt_fn fn, attn_dtype dt, int m, int nk, int d, int dqs, int dv, int dvp, int sc,
            int i8, int dp_bit)
{
    static const char *const what[3] = { "the max stays", "lane 0 moves the max", "the first key" };
    const float cap = sc ? 1.5f : 0.0f, icap = sc ? 1.0f / 1.5f : 0.0f; /* cap tanh(s / cap): bends |s| <= 1 */
    const int dp_have = i8 && dp_bit != 0 && (attn_cpu()->int8_dot & dp_bit) != 0;
    const size_t nq = (size_t)m * dqs;
    size_t es, nkv;
    int ok = 1, rep, dp;
    cases_run = 0;
    if (!dtype_known(dt)) return unknown_dtype(name, dt);
    es = elem_size(dt);
    nkv = units(dt, (size_t)d);
    if (m < 1 || m > 4 || nk < 1 || nk > UKT_MAX_NK || d > UKT_MAX_D || dqs < d || dv < 1 || dvp < dv ||
        (i8 && d % 32 != 0)) {
        printf("FAIL %s: no tester for %d rows, %d keys, D = %d, DQS = %d, Dv = %d, DVP = %d\n", name, m, nk, d, dqs,
               dv, dvp);
        return UKT_FAIL;
    }
    for (dp = 0; dp <= dp_have; dp++) /* i8: the plain form, then the extension's where the CPU has it */
        for (rep = 0; rep < 3; rep++) {
            const int terms = nk == 1 && rep > 0; /* the several-key steps take none */
            guarded gq, gk[UKT_MAX_NK];
            const void *kr[UKT_MAX_NK];
            void *k0[UKT_MAX_NK];
            float *q = guarded_alloc(&gq, nq, sizeof(float)), *q0, th[8];
            double *qv = malloc((size_t)m * d * sizeof(double)), s[4 * UKT_MAX_NK], sb[4 * UKT_MAX_NK], big = 0.0;
            step_case c;
            int i, kk, sig;
            if (!qv) {
                fprintf(stderr, "ukernel tests: out of memory\n");
                exit(2);
            }
            reseed((unsigned)(70 + 3 * dp + rep));
            for (kk = 0; kk < nk; kk++) { /* each K row ends at its guard page */
                void *v = guarded_alloc(&gk[kk], nkv, es);
                if (i8) idot_krow(dt, v, d);
                else
                    for (i = 0; i < d; i++) put_rnd(dt, v, (size_t)i);
                kr[kk] = v;
                k0[kk] = copy_of(v, nkv, es);
            }
            sqk_rows(q, qv, dt, m, d, dqs, i8, dp ? dp_bit : 0, kr, nk);
            for (i = 0; i < 4; i++) { /* terms: add, and a row hidden (the last of several; row 0 at the first key) */
                th[i] = terms && i < m ? 0.5f * rnd() : 0.0f;
                th[4 + i] = terms && ((rep == 1 && m > 1 && i == m - 1) || (rep == 2 && i == 0)) ? -INFINITY : 0.0f;
            }
            sqk_scores(s, sb, qv, dt, m, d, kr, nk, cap, icap, terms, th);
            for (i = 0; i < 4 * nk; i++) big = sb[i] > big ? sb[i] : big;
            sqk_state(&c, s, nk, rep);
            q0 = copy_of(q, nq, sizeof(float));
            step_open(&c, m, dvp);
            snprintf(shape, sizeof shape, "M = %d, %d key%s, D = %d, DQS = %d, DVP = %d, K %s%s%s%s, %s", m, nk,
                     nk > 1 ? "s" : "", d, dqs, dvp, attn_dtype_name(dt), sc ? ", softcap" : "",
                     terms ? ", terms" : "", i8 ? (dp ? ", int8 extension" : ", int8 plain") : "", what[rep]);
            mismatches = 0;
            for (kk = 0; kk < nk; kk++) /* the keys in order, the earlier weights rescaled with O */
                supd_model(s + 4 * kk, c.dm, c.dl, c.dobuf, m, dvp, c.dw, kk, c.dw + 4 * kk);
            sig = call_sqk(fn, q, kr, terms, th, &c, cap, icap);
            if (sig) fault(name, sig);
            else {
                check_input(name, "q", q, q0, nq, sizeof(float));
                for (kk = 0; kk < nk; kk++) check_input(name, "k", kr[kk], k0[kk], nkv, es);
            }
            step_close(&c, name, m, dvp, 4 * nk, 0, 1.0 + log(2.0) * big, !sig);
            ok &= case_done(name);
            for (kk = 0; kk < nk; kk++) {
                free(k0[kk]);
                guarded_free(&gk[kk]);
            }
            free(q0);
            free(qv);
            guarded_free(&gq);
        }
    snprintf(shape, sizeof shape, "%dx%d, K %s, D = %d, Dv = %d%s%s: %d cases", m, nk, attn_dtype_name(dt), d, dv,
             sc ? ", softcap" : "", i8 ? ", int8" : "", cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}

/* ---- qpackdp: a query row packed as pairs of head dims ------------------ */

#define UKT_PAD16 0xa5a5u /* around a packed row's pairs: nothing may write it */

static int call_qpackdp(ukt_fn fn, const uint16_t *src, uint16_t *dst)
{
    int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) {
        fault_armed = 1;
        ((ukt_qpackdp16_fn)fn)(src, dst);
        fault_armed = 0;
    }
    return sig;
}

int ukt_qpackdp(const char *name, ukt_fn fn, attn_dtype dt, int n, int d)
{
    const size_t nd = 2 * (size_t)n, all = nd + 2 * PAD;
    int ok = 1, rep;
    cases_run = 0;
    if (dt != ATTN_DTYPE_BF16) return unknown_dtype(name, dt);
    if (d < 1 || n != (d + 1) / 2) {
        printf("FAIL %s: no tester for %d pairs of D = %d (a row's pairs are ceil(D / 2))\n", name, n, d);
        return UKT_FAIL;
    }
    for (rep = 0; rep < 2; rep++) {
        guarded gs;
        uint16_t *src = guarded_alloc(&gs, (size_t)d, sizeof(uint16_t)), *dst = malloc(all * sizeof(uint16_t));
        uint16_t *s0;
        size_t i;
        int sig;
        if (!dst) {
            fprintf(stderr, "ukernel tests: out of memory\n");
            exit(2);
        }
        reseed((unsigned)(90 + rep));
        for (i = 0; i < (size_t)d; i++) put_rnd(dt, src, i); /* the row ends at its guard page */
        for (i = 0; i < all; i++) dst[i] = UKT_PAD16; /* where the zeros past D are due too */
        for (i = 0; i < (size_t)d; i++) dst[PAD + i] = (uint16_t)(rnd() * 1000.0f + 2000.0f);
        s0 = copy_of(src, (size_t)d, sizeof(uint16_t));
        snprintf(shape, sizeof shape, "D = %d, %d pairs, case %d", d, n, rep);
        mismatches = 0;
        sig = call_qpackdp(fn, src, dst + PAD);
        if (sig) fault(name, sig);
        else {
            for (i = 0; i < all; i++) {
                const long at = (long)i - PAD;
                const int in_row = at >= 0 && at < (long)nd;
                const unsigned want = !in_row ? UKT_PAD16 : at < d ? src[at] : 0u;
                if (dst[i] != want && mismatches++ == 0)
                    printf("FAIL %s: dst[%ld] = 0x%04x, expected 0x%04x (%s) with %s\n", name, at, dst[i], want,
                           !in_row ? "outside its row" : at < d ? "the value" : "a zero past D", shape);
            }
            check_input(name, "src", src, s0, (size_t)d, sizeof(uint16_t));
        }
        ok &= case_done(name);
        free(s0);
        free(dst);
        guarded_free(&gs);
    }
    snprintf(shape, sizeof shape, "1x%d, bf16, D = %d: %d cases", n, d, cases_run);
    return ok ? UKT_PASS : UKT_FAIL;
}
