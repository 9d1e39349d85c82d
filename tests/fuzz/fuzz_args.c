/*
 * fuzz_args.c - libFuzzer target for a kernel entry point's argument
 * validation and, for arguments it accepts, the kernel itself.
 *
 * The input is decoded into an attn_args (shapes, strides, thread count,
 * seqlens_k, which pointers are NULL) for one of the kernels listed in
 * fuzz_kernels.h (KERNEL(name) lines, written by the Makefile).  Then:
 *
 *  1. attn_check_args runs with every non-NULL tensor pointer aimed at
 *     ASan-poisoned memory, and its status must be consistent with the
 *     args: NULL_ARG exactly when a required pointer is NULL; SHAPE, STRIDE,
 *     THREADS, SEQLENS only when a length, stride, thread count or seqlens_k
 *     value is out of range; OK only when none is.
 *  2. A rejected call goes through the entry point too (the dispatching
 *     attn_<name>_fwd or one ISA variant's fwd): it must return the same
 *     status without touching a tensor (any access hits poisoned memory).
 *  3. An accepted call small enough to run gets buffers of exactly the
 *     size its shapes and strides span (so ASan sees any access outside a
 *     tensor), in the kernel's storage types: inputs N(0,1) narrowed to
 *     their type, with NaN in the gaps between elements, O pre-filled with
 *     a sentinel; the entry point must return ATTN_OK, O (widened) and LSE
 *     must match attn_reference, run on the stored inputs widened, within
 *     the tolerance of O's type (ATTN_REF_TOL, attn_reference.h), and O's
 *     gaps must still hold the sentinel.
 *     Linear kernels (kind = "linear"): no mask (its fields are ignored),
 *     and an LSE buffer must stay untouched; with state, the state gets a
 *     random start (z positive), the reference starts from a copy, and the
 *     states written back must agree within ATTN_REF_TOL_STATE.
 *     Additive and luong kernels (attn_classic_args) decode an input of
 *     their own, described before classic_one below.
 *
 * Input layout (missing bytes read as 0):
 *   kernel (1 byte, index mod the number of kernels)
 *   entry  (1 byte: 0 the dispatching entry point, n > 0 variant (n-1) mod
 *          n_variants, or the entry point when this CPU cannot run it)
 *   flags  (1 byte: bits 0-3 Q, K, V, O NULL; 4 LSE requested; 5 seqlens_k
 *          NULL; 6 mask NULL; 7 sparse bool mask / -inf bias entries;
 *          linear kernels with state: 6 state_s NULL, 7 state_z NULL;
 *          kernels with rel_bias: 6 rel_table NULL too; with sinks, sinks;
 *          with qk_norm, q_norm_w)
 *   batch, seq_q, seq_k (length fields)
 *   strides Q {h, s, b}, K {h, s, b}, V {h, s, b}, O {h, s, b},
 *           mask {j, i, h, b} (stride fields, innermost first)
 *   threads (1 byte, as int8), seed (4 bytes)
 *   seqlens_k[b] for b < 64 (seqlen fields; later batches get full length)
 *   paged kernels (spec.page > 0): their block table (paged_table below)
 *   rope-table kernels (rope = {table = true}), last: rope_rows and the
 *   table's faults (rope_fields below)
 * A paged kernel's K and V strides are the pools' {page, slot, head}: decoded
 * as a [page][slot][head] tensor (NHD) or with slot and head swapped (HND).
 * K and V in a block type (q8_0, q4_0): strides and rows count blocks of 32
 * values (D / 32 a row), so no stride cuts a block; the buffers hold whole
 * blocks, filled by the runtime's quantizers (gap blocks from NaNs), and the
 * reference reads the stored blocks dequantized.
 * A length field is a byte m: m < 0xE0 the value m; 0xE0..0xEF the value
 * 224 + ((m - 0xE0) << 8 | next byte); 0xF0..0xF7 a boundary value
 * (special[]); 0xF8..0xFF the next 8 bytes as a little-endian int64.
 * A stride field is m < 0x80: the contiguous stride plus a gap of m
 * elements; 0x80..0xEF: the value m - 0x80; then as for lengths.
 * A seqlen field is m < 0x80: seq_k - m (at least 0); 0x80..0xEF: m - 0x80;
 * 0xF0..0xFF: by m & 7, -1, seq_k + 1, INT32_MIN, INT32_MAX, 0, seq_k, 1, seq_k - 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "attn_runtime.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) __asan_poison_memory_region((p), (n))
#endif
#endif
#ifndef POISON
#define POISON(p, n) ((void)(p), (void)(n))
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KERNEL(name) extern const attn_kernel attn_##name##_kernel;
#include "fuzz_kernels.h"
#undef KERNEL

static const attn_kernel *const kernels[] = {
#define KERNEL(name) &attn_##name##_kernel,
#include "fuzz_kernels.h"
#undef KERNEL
};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

/* Runs are skipped above these: the fuzzer should stay fast. */
#define MAX_WORK ((int64_t)1 << 20)     /* B * Hq * Lq * Lk * (D + Dv), and B * Hkv * Lk * D * Dv */
#define MAX_ELEMS ((int64_t)1 << 22)    /* elements spanned or visited per tensor */
#define MAX_LENGTH ((int64_t)1 << 16)   /* batch, seq_q, seq_k */
#define MAX_SEQLENS 1024                /* seqlens_k entries we allocate */
#define SEQLEN_FIELDS 64

/* O's gaps: a quiet NaN of O's storage type (f32; bf16 and f16 below) */
#define O_GAP_BITS 0x7fc0deadu

/* ---- input decoding ------------------------------------------------------ */

typedef struct {
    const uint8_t *p, *end;
} input;

static unsigned next_byte(input *in)
{
    return in->p < in->end ? *in->p++ : 0u;
}

static int64_t next_i64(input *in)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++)
        v |= (uint64_t)next_byte(in) << (8 * i);
    return (int64_t)v;
}

static const int64_t special[8] = {
    -1, INT64_MIN, INT64_MAX, (int64_t)1 << 62, ((int64_t)1 << 62) + 1,
    ((int64_t)1 << 61) - 1, ((int64_t)1 << 61) - 2, ((int64_t)1 << 32) + 1,
};

static int64_t length_field(input *in)
{
    const unsigned m = next_byte(in);
    if (m < 0xE0)
        return m;
    if (m < 0xF0)
        return 224 + (int64_t)(((m - 0xE0) << 8) | next_byte(in));
    if (m < 0xF8)
        return special[m - 0xF0];
    return next_i64(in);
}

/* a + b for a, b >= 0, saturating */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* a * b for a, b >= 0, saturating */
static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* Elements spanned by dims (innermost first; negative parts count as 0). */
static int64_t natural(const int64_t *ext, const int64_t *str, int n)
{
    int64_t span = 1;
    int d;
    for (d = 0; d < n; d++)
        if (ext[d] > 1 && str[d] > 0)
            span = sat_add(span, sat_mul(ext[d] - 1, str[d]));
    return span;
}

static int64_t stride_field(input *in, int64_t contiguous)
{
    const unsigned m = next_byte(in);
    if (m < 0x80)
        return sat_add(contiguous, m);
    if (m < 0xF0)
        return m - 0x80;
    if (m < 0xF8)
        return special[m - 0xF0];
    return next_i64(in);
}

/* Strides of a [batch][seq][heads][inner] tensor whose last dim has
   stride 1: str[2] (h), str[1] (s), str[0] (b), decoded in that order. */
static void decode_strides3(input *in, int64_t *str, int64_t seq, int64_t heads, int64_t inner)
{
    int64_t ext[3], s[3];
    ext[0] = inner;
    s[0] = 1;
    ext[1] = heads;
    s[1] = str[2] = stride_field(in, natural(ext, s, 1));
    ext[2] = seq;
    s[2] = str[1] = stride_field(in, natural(ext, s, 2));
    str[0] = stride_field(in, natural(ext, s, 3));
}

/* mask [b][h][i][j]: j, i, h, b */
static void decode_strides4(input *in, int64_t *str, const int64_t *ext4)
{
    int64_t ext[4], s[4];
    int d;
    for (d = 3; d >= 0; d--) {
        const int n = 3 - d; /* dims already decoded */
        str[d] = stride_field(in, n == 0 ? 1 : natural(ext, s, n));
        ext[n] = ext4[d];
        s[n] = str[d];
    }
}

static int32_t seqlen_field(input *in, int64_t seq_k)
{
    const unsigned m = next_byte(in);
    const int64_t lk = seq_k < 0 ? 0 : seq_k > INT32_MAX ? INT32_MAX : seq_k;
    int64_t v;
    if (m < 0x80)
        v = lk - (int64_t)m < 0 ? 0 : lk - (int64_t)m;
    else if (m < 0xF0)
        v = m - 0x80;
    else {
        const int64_t table[8] = {-1, lk + 1, INT32_MIN, INT32_MAX, 0, lk, 1, lk - 1};
        v = table[(m - 0xF0) & 7];
    }
    return (int32_t)(v > INT32_MAX ? INT32_MAX : v);
}

/* ---- helpers --------------------------------------------------------------- */

static const attn_kernel *cur_kernel;
static const char *cur_entry;

#ifdef __GNUC__
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void die(const char *fmt, ...);

static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_args: %s (%s): ", cur_kernel ? cur_kernel->spec.name : "?",
            cur_entry ? cur_entry : "?");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort(); /* libFuzzer saves the input as a crash artifact */
}

/* Memory no tensor access may touch (ASan reports use-after-poison). */
static float poison_area[64];

static void *poisoned(void)
{
    static int done;
    if (!done) {
        POISON(poison_area, sizeof poison_area);
        done = 1;
    }
    return poison_area + 16;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* (0, 1] */
{
    return ((double)(rng_next(s) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

static float rng_normal(uint64_t *s)
{
    const double u1 = rng_unit(s), u2 = rng_unit(s);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static float bits_float(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A 4-D tensor layout (the last dim may have a stride other than 1). */
typedef struct {
    int64_t ext[4], str[4];
    int64_t span;  /* elements from offset 0 to the last one, plus 1; 0 if empty */
    int64_t count; /* logical elements (saturating) */
} layout;

/* Only called once attn_check_args accepted the args: offsets fit. */
static void set_layout(layout *l, int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                       const int64_t *str3, int64_t str_last)
{
    int d;
    l->ext[0] = e0;
    l->ext[1] = e1;
    l->ext[2] = e2;
    l->ext[3] = e3;
    memcpy(l->str, str3, 3 * sizeof *str3);
    l->str[3] = str_last;
    l->count = 1;
    for (d = 0; d < 4; d++)
        l->count = sat_mul(l->count, l->ext[d]);
    l->span = 0;
    if (l->count > 0) {
        l->span = 1;
        for (d = 0; d < 4; d++)
            l->span += (l->ext[d] - 1) * l->str[d];
    }
}

/* Whether a tensor spans or has more elements than a run builds and visits
   (a stride of 0 gives it many more logical elements than its span). */
static int too_large(const layout *l)
{
    return l->span > MAX_ELEMS || l->count > MAX_ELEMS;
}

/* Whether distinct logical elements have distinct offsets. */
static int injective(const layout *l)
{
    int64_t ext[4], str[4], reach = 0;
    int n = 0, d, i;
    if (l->count == 0)
        return 1; /* no elements: the strides were never checked */
    for (d = 0; d < 4; d++) {
        if (l->ext[d] <= 1)
            continue;
        /* insertion by stride */
        for (i = n; i > 0 && str[i - 1] > l->str[d]; i--) {
            str[i] = str[i - 1];
            ext[i] = ext[i - 1];
        }
        str[i] = l->str[d];
        ext[i] = l->ext[d];
        n++;
    }
    for (i = 0; i < n; i++) {
        if (str[i] <= reach)
            return 0;
        reach += (ext[i] - 1) * str[i];
    }
    return 1;
}

static int64_t offset_of(const layout *l, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * l->str[0] + b * l->str[1] + c * l->str[2] + d * l->str[3];
}

static void *alloc_elems(int64_t n, size_t esize)
{
    void *p;
    if (n == 0)
        return poisoned();
    p = malloc((size_t)n * esize);
    if (p == NULL)
        die("out of memory (%lld elements)", (long long)n);
    return p;
}

static void release(void *p)
{
    if (p != poisoned())
        free(p);
}

/* Inputs as f32: NaN everywhere, then N(0,1) at every logical element. */
static float *make_input(const layout *l, uint64_t *rng)
{
    float *buf = (float *)alloc_elems(l->span, sizeof(float));
    int64_t a, b, c, d;
    if (l->span == 0)
        return buf;
    for (a = 0; a < l->span; a++)
        buf[a] = NAN;
    for (a = 0; a < l->ext[0]; a++)
        for (b = 0; b < l->ext[1]; b++)
            for (c = 0; c < l->ext[2]; c++)
                for (d = 0; d < l->ext[3]; d++)
                    buf[offset_of(l, a, b, c, d)] = rng_normal(rng);
    return buf;
}

/* The f32 inputs in wide stored as dtype (round to nearest even) in a
   buffer of exactly their span, and the stored values widened back into
   wide: what the kernel reads, for the reference.  f32: wide itself. */
static void *store_input(const layout *l, float *wide, attn_dtype dtype)
{
    uint16_t *buf;
    if (dtype == ATTN_DTYPE_F32 || l->span == 0)
        return wide;
    buf = (uint16_t *)alloc_elems(l->span, sizeof(uint16_t));
    attn_f32_to_dtype_array(dtype, wide, buf, (size_t)l->span);
    attn_dtype_to_f32_array(dtype, buf, wide, (size_t)l->span);
    return buf;
}

/* Element i of O as stored: its bits and its value. */
static uint32_t o_bits(const void *o, attn_dtype dtype, int64_t i)
{
    uint32_t bits;
    if (dtype != ATTN_DTYPE_F32)
        return ((const uint16_t *)o)[i];
    memcpy(&bits, (const float *)o + i, sizeof bits);
    return bits;
}

static float o_value(const void *o, attn_dtype dtype, int64_t i)
{
    if (dtype == ATTN_DTYPE_BF16)
        return attn_bf16_to_f32(((const uint16_t *)o)[i]);
    if (dtype == ATTN_DTYPE_F16)
        return attn_f16_to_f32(((const uint16_t *)o)[i]);
    return ((const float *)o)[i];
}

static uint32_t gap_bits(attn_dtype dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? 0x7fdeu : dtype == ATTN_DTYPE_F16 ? 0x7eadu : O_GAP_BITS;
}

/* O of storage type dtype, every element of its span the gap sentinel */
static void *make_output(const layout *l, attn_dtype dtype)
{
    void *buf = alloc_elems(l->span, attn_dtype_size(dtype));
    const float gap = bits_float(O_GAP_BITS);
    int64_t i;
    for (i = 0; i < l->span; i++) {
        if (dtype == ATTN_DTYPE_F32)
            ((float *)buf)[i] = gap;
        else
            ((uint16_t *)buf)[i] = (uint16_t)gap_bits(dtype);
    }
    return buf;
}

/* x, an output, against the reference within tol */
static int close_enough(float x, float ref, double tol)
{
    if (isnan(x) || isnan(ref))
        return isnan(x) && isnan(ref);
    if (isinf(x) || isinf(ref))
        return x == ref;
    return fabs((double)x - (double)ref) <= tol;
}

/* ---- the checks ------------------------------------------------------------ */

static int any_negative(const int64_t *v, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (v[i] < 0)
            return 1;
    return 0;
}

static int all_below(const int64_t *v, int n, int64_t limit)
{
    int i;
    for (i = 0; i < n; i++)
        if (v[i] >= limit)
            return 0;
    return 1;
}

/* Values an element of K and V holds: 32 for a block type (q8_0, q4_0), else 1.  Their
   strides count elements (blocks), so a stride never cuts a block. */
static int64_t kv_values(const attn_spec *spec)
{
    const int n = attn_dtype_values(spec->dtype_kv);
    return n > 1 ? n : 1;
}

/* rope = {table = true}: the caller's cos / sin table */
static int has_rope_table(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_SDPA && spec->rope_style != ATTN_ROPE_NONE && spec->rope_table;
}

/* Whether a query row's position lies outside the table's rows 0..rope_rows-1: positions
   i + Lk_b - Lq (i top-left) for every sequence b, Lk_b its seqlens_k with padding. */
static int rope_outside(const attn_spec *spec, const attn_args *a)
{
    const int64_t nb = spec->padding ? a->batch : a->batch > 0 ? 1 : 0;
    int64_t b;
    if (a->seq_q == 0)
        return 0;
    for (b = 0; b < nb; b++) {
        const int64_t lk = spec->padding ? a->seqlens_k[b] : a->seq_k;
        const int64_t lo = spec->top_left ? 0 : lk - a->seq_q, hi = spec->top_left ? a->seq_q - 1 : lk - 1;
        if (lo < 0 || hi >= a->rope_rows)
            return 1;
    }
    return 0;
}

/* Step 1: the status must agree with what is wrong with the args. */
static void check_status(const attn_spec *spec, const attn_args *a, attn_status st)
{
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    const int has_mask = !linear && spec->mask != ATTN_MASK_NONE;
    const int has_state = linear && spec->state;
    /* shared_kv: V is read from K's rows, args->v and v_stride are ignored */
    const int has_v = linear || !spec->shared_kv;
    const int paged = !linear && spec->page > 0;
    const int null_arg = a->q == NULL || a->k == NULL || (has_v && a->v == NULL) || a->o == NULL ||
                         (spec->padding && a->seqlens_k == NULL) || (has_mask && a->mask == NULL) ||
                         (paged && a->block_table == NULL) ||
                         (has_state && (a->state_s == NULL || a->state_z == NULL)) ||
                         (!linear && spec->sinks && a->sinks == NULL) ||
                         (attn_rel_rows(spec) > 0 && a->rel_table == NULL) ||
                         (!linear && spec->qk_norm && a->q_norm_w == NULL);
    const int bad_shape = a->batch < 0 || a->seq_q < 0 || a->seq_k < 0 || (paged && a->num_pages < 0);
    const int bad_stride = any_negative(a->q_stride, 3) || any_negative(a->k_stride, 3) ||
                           (has_v && any_negative(a->v_stride, 3)) || any_negative(a->o_stride, 3) ||
                           (has_mask && any_negative(a->mask_stride, 4)) || (paged && a->block_table_stride < 0);
    /* the rope table's faults, checked after every other argument's (a NULL table among
       them: ATTN_ERR_NULL_ARG only when nothing else is wrong) */
    const int rope = has_rope_table(spec);
    const int rope_null = rope && (a->rope_cos == NULL || a->rope_sin == NULL);
    int bad_seqlens = 0, bad_page = 0, evicted = 0, bad_rope = 0;
    int64_t b, e;

    if (spec->padding && !null_arg && !bad_shape && a->batch <= MAX_SEQLENS)
        for (b = 0; b < a->batch; b++)
            bad_seqlens |= a->seqlens_k[b] < 0 || a->seqlens_k[b] > a->seq_k;
    /* the block table's entries of every sequence's pages: one naming no page of the
       pools is always ATTN_ERR_PAGE; an evicted one (-1) is where a row sees the page */
    if (paged && !null_arg && !bad_shape && !bad_stride && !bad_seqlens && a->batch <= MAX_SEQLENS)
        for (b = 0; b < a->batch; b++)
            for (e = 0; e * spec->page < a->seqlens_k[b]; e++) {
                const int32_t page = a->block_table[b * a->block_table_stride + e];
                evicted |= page == -1;
                bad_page |= page < -1 || page >= a->num_pages;
            }

    if (rope && !null_arg && !bad_shape && !bad_stride && !bad_seqlens && a->rope_rows >= 0 &&
        (!spec->padding || a->batch <= MAX_SEQLENS))
        bad_rope = rope_outside(spec, a);

    if (null_arg ? st != ATTN_ERR_NULL_ARG : st == ATTN_ERR_NULL_ARG && !rope_null)
        die("status '%s' but a required pointer is %s", attn_status_string(st),
            null_arg ? "NULL" : "not NULL");
    switch (st) {
    case ATTN_OK:
        if (bad_shape || bad_stride || a->threads < 0 || bad_seqlens || bad_page || rope_null ||
            (rope && a->rope_rows < 0) || bad_rope)
            die("accepted bad args (shape %d, stride %d, threads %d, seqlens %d, page %d, rope table %s, "
                "rope_rows %lld, a position outside it %d)", bad_shape, bad_stride, a->threads, bad_seqlens,
                bad_page, rope_null ? "NULL" : "given", (long long)a->rope_rows, bad_rope);
        break;
    case ATTN_ERR_ROPE:
        if (!bad_rope)
            die("'%s' but every position lies in the table's %lld rows", attn_status_string(st),
                (long long)a->rope_rows);
        break;
    case ATTN_ERR_PAGE:
        if (!bad_page && !evicted)
            die("'%s' but every entry names a page of the pools", attn_status_string(st));
        break;
    case ATTN_ERR_NULL_ARG: break;
    case ATTN_ERR_SHAPE:
        if (!bad_shape && !(rope && a->rope_rows < 0))
            die("'%s' but no length is negative", attn_status_string(st));
        break;
    case ATTN_ERR_STRIDE:
        if (!bad_stride)
            die("'%s' but no stride is negative", attn_status_string(st));
        break;
    case ATTN_ERR_THREADS:
        if (a->threads >= 0)
            die("'%s' with threads = %d", attn_status_string(st), a->threads);
        break;
    case ATTN_ERR_SEQLENS:
        if (!spec->padding || (a->batch <= MAX_SEQLENS && !bad_seqlens))
            die("'%s' but every seqlens_k value is in range", attn_status_string(st));
        break;
    case ATTN_ERR_TOO_LARGE:
        /* with lengths below 2^24 and strides below 2^28 every offset (and
           LSE's B * Hq * Lq) stays far below 2^61 */
        if (a->batch < ((int64_t)1 << 24) && a->seq_q < ((int64_t)1 << 24) &&
            a->seq_k < ((int64_t)1 << 24) && (!paged || a->num_pages < ((int64_t)1 << 24)) &&
            all_below(a->q_stride, 3, (int64_t)1 << 28) &&
            all_below(a->k_stride, 3, (int64_t)1 << 28) &&
            (!has_v || all_below(a->v_stride, 3, (int64_t)1 << 28)) &&
            all_below(a->o_stride, 3, (int64_t)1 << 28) &&
            (!has_mask || all_below(a->mask_stride, 4, (int64_t)1 << 28)) &&
            (!rope || a->rope_rows < ((int64_t)1 << 24)))
            die("'%s' for lengths below 2^24 and strides below 2^28", attn_status_string(st));
        break;
    default:
        die("attn_check_args returned '%s' (%d)", attn_status_string(st), (int)st);
    }
}

/* K's and V's layouts: [B][Lk][Hkv][D or Dv], or a paged kernel's pools [N][P][Hkv][D or Dv]
   (strides {page, slot, head}), in elements: D / 32 blocks a row for a block type. */
static void kv_layouts(const attn_spec *spec, const attn_args *a, layout *lk, layout *lv)
{
    const int paged = spec->family != ATTN_FAMILY_LINEAR && spec->page > 0;
    const int64_t n = paged ? a->num_pages : a->batch, len = paged ? spec->page : a->seq_k;
    set_layout(lk, n, len, spec->heads_kv, spec->head_dim / kv_values(spec), a->k_stride, 1);
    set_layout(lv, n, len, spec->heads_kv, spec->head_dim_v / kv_values(spec), a->v_stride, 1);
}

/* A layout in blocks of nv values, as values: the same bytes dequantized (strides times nv).
   A dim of one element, or every dim of a tensor with none, gets stride 0: no offset along it
   is formed, and the stride the kernel accepted in blocks may not fit as values (the reference
   checks its f32 copy's strides as the kernel's). */
static void values_layout(const layout *blocks, int64_t nv, layout *w)
{
    int d;
    *w = *blocks;
    for (d = 0; d < 3 && nv > 1; d++)
        w->str[d] = blocks->count > 0 && blocks->ext[d] > 1 ? sat_mul(blocks->str[d], nv) : 0;
    w->ext[3] = blocks->ext[3] * nv;
    w->span = sat_mul(blocks->span, nv);
    w->count = sat_mul(blocks->count, nv);
}

/* The values in wide (a layout in values, NaN gaps) quantized into a buffer of exactly
   n_blocks blocks of dtype (the runtime's quantizers), and wide overwritten with the stored
   values dequantized: what the kernel reads, for the reference. */
static void *store_blocks(float *wide, int64_t n_blocks, attn_dtype dtype)
{
    const int64_t n = n_blocks * attn_dtype_values(dtype);
    void *buf;
    if (n_blocks == 0)
        return wide;
    buf = alloc_elems(n_blocks, attn_dtype_size(dtype));
    if ((dtype == ATTN_DTYPE_Q8_0 ? attn_quantize_q8_0(wide, buf, n) : attn_quantize_q4_0(wide, buf, n)) != ATTN_OK ||
        (dtype == ATTN_DTYPE_Q8_0 ? attn_dequantize_q8_0(buf, wide, n) : attn_dequantize_q4_0(buf, wide, n)) != ATTN_OK)
        die("the %s quantizer refused %lld values", attn_dtype_name(dtype), (long long)n);
    return buf;
}

/* A cos / sin table of exactly rows * rope_dim / 2 values each, of random angles (the
   kernel and the reference read the same table); NULL when too large to build. */
static float *rope_table(const attn_spec *spec, int64_t rows, int want_sin, uint64_t *rng)
{
    const int64_t n = sat_mul(rows, spec->rope_dim / 2);
    float *t;
    int64_t i;
    if (n > MAX_ELEMS)
        return NULL;
    t = (float *)alloc_elems(n, sizeof(float));
    for (i = 0; i < n; i++) {
        const double angle = 6.283185307179586 * rng_unit(rng);
        t[i] = (float)(want_sin ? sin(angle) : cos(angle));
    }
    return t;
}

/* What the phases of step 3 share: the accepted call, its layouts (values_layout's
   lkw and lvw: K and V in values), the buffers it runs on and the reference's. */
typedef struct {
    const attn_spec *spec;
    attn_args *a;
    uint64_t seed; /* the random draws, in order: Q, K, V, RoPE, mask, rel, state, sinks, norm */
    int sparse, linear, has_mask;
    int64_t B, Lq, Lk, Hq, Hkv, D, Dv;
    int64_t n_s, n_z, nv, lse_count;
    attn_dtype odt;
    layout lq, lk, lv, lkw, lvw, lo, lm;
    float *q, *k, *v, *o_ref, *lse, *lse_ref;
    float *rope_cos, *rope_sin;
    float *st_s, *st_z, *s0, *z0, *ref_s, *ref_z;
    void *qs, *ks, *vs, *o;
    void *mask;
    float *sinks;
    float *rel;
    float *norm_w; /* qk_norm: q_norm_w [D] (k_norm_w is read only when appending) */
    attn_args ref;
} sdpa_run;

/* The call's shapes and layouts into r; 0 where it is too large to build
   and visit (the input is skipped). */
static int run_layouts(sdpa_run *r, const attn_spec *spec, attn_args *a, uint64_t seed, int sparse)
{
    const int64_t B = a->batch, Lq = a->seq_q, Lk = a->seq_k;
    const int64_t Hq = spec->heads_q, D = spec->head_dim, Dv = spec->head_dim_v;
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    int64_t work;

    memset(r, 0, sizeof *r);
    r->spec = spec;
    r->a = a;
    r->seed = seed;
    r->sparse = sparse;
    r->B = B;
    r->Lq = Lq;
    r->Lk = Lk;
    r->Hq = Hq;
    r->Hkv = spec->heads_kv;
    r->D = D;
    r->Dv = Dv;
    r->linear = linear;
    r->has_mask = !linear && spec->mask != ATTN_MASK_NONE;
    r->n_s = linear && spec->state ? sat_mul(sat_mul(B, r->Hkv), sat_mul(D, Dv)) : 0;
    r->n_z = linear && spec->state ? sat_mul(sat_mul(B, r->Hkv), D) : 0;
    r->odt = spec->dtype_o;
    r->nv = kv_values(spec); /* K's and V's values an element */

    /* loops run over every (b, h, i) and (b, h, j) even when a dim is
       empty, and scratch memory grows with each length on its own */
    work = sat_mul(sat_mul(sat_mul(B, Hq), sat_mul(Lq > 0 ? Lq : 1, Lk > 0 ? Lk : 1)), D + Dv);
    if (work > MAX_WORK || B > MAX_LENGTH || Lq > MAX_LENGTH || Lk > MAX_LENGTH ||
        sat_mul(r->n_s, Lk > 0 ? Lk : 1) > MAX_WORK)
        return 0;
    /* shared_kv: V's strides are ignored (any value was accepted); the
       harness lays its unread V out like K */
    if (!linear && spec->shared_kv)
        memcpy(a->v_stride, a->k_stride, sizeof a->v_stride);
    set_layout(&r->lq, B, Lq, Hq, D, a->q_stride, 1);
    kv_layouts(spec, a, &r->lk, &r->lv);
    values_layout(&r->lk, r->nv, &r->lkw);
    values_layout(&r->lv, r->nv, &r->lvw);
    set_layout(&r->lo, B, Lq, Hq, Dv, a->o_stride, 1);
    if (r->has_mask)
        set_layout(&r->lm, B, Hq, Lq, Lk, a->mask_stride, a->mask_stride[3]);
    if (too_large(&r->lq) || too_large(&r->lkw) || too_large(&r->lvw) || too_large(&r->lo) ||
        (r->has_mask && too_large(&r->lm)) ||
        (has_rope_table(spec) && sat_mul(a->rope_rows, spec->rope_dim / 2) > MAX_ELEMS))
        return 0;
    if (a->lse != NULL) {
        r->lse_count = sat_mul(sat_mul(B, Hq), Lq);
        if (r->lse_count > MAX_ELEMS)
            return 0;
    }
    return 1;
}

/* The mask a call given one reads: bool, true with probability 0.8 (0.2
   sparse), or additive N(0,1), -inf at one element in 8 where sparse. */
static void run_mask(sdpa_run *r)
{
    const layout *lm = &r->lm;
    const int64_t B = r->B, Hq = r->Hq, Lq = r->Lq, Lk = r->Lk;
    int64_t x, y, z, w;
    if (r->spec->mask == ATTN_MASK_BOOL) {
        unsigned char *m = (unsigned char *)alloc_elems(lm->span, 1);
        if (lm->span > 0)
            memset(m, 0, (size_t)lm->span);
        for (x = 0; x < B; x++)
            for (y = 0; y < Hq; y++)
                for (z = 0; z < Lq; z++)
                    for (w = 0; w < Lk; w++)
                        m[offset_of(lm, x, y, z, w)] = rng_unit(&r->seed) < (r->sparse ? 0.2 : 0.8);
        r->mask = m;
    } else {
        float *m = make_input(lm, &r->seed);
        if (r->sparse)
            for (x = 0; x < B; x++)
                for (y = 0; y < Hq; y++)
                    for (z = 0; z < Lq; z++)
                        for (w = 0; w < Lk; w++)
                            if ((rng_next(&r->seed) & 7) == 0)
                                m[offset_of(lm, x, y, z, w)] = -INFINITY;
        r->mask = m;
    }
    r->a->mask = r->mask;
}

/* Q, K, V (N(0,1), NaN gaps) as stored and widened back, the RoPE tables,
   O (the gap sentinel) and its reference, the mask. */
static void run_inputs(sdpa_run *r)
{
    const attn_spec *spec = r->spec;
    attn_args *a = r->a;
    r->q = make_input(&r->lq, &r->seed);
    r->k = make_input(&r->lkw, &r->seed);
    r->v = make_input(&r->lvw, &r->seed);
    r->qs = store_input(&r->lq, r->q, spec->dtype_q);
    if (r->nv > 1) { /* whole blocks, each gap block quantized from its NaNs */
        r->ks = store_blocks(r->k, r->lk.span, spec->dtype_kv);
        r->vs = store_blocks(r->v, r->lv.span, spec->dtype_kv);
    } else {
        r->ks = store_input(&r->lk, r->k, spec->dtype_kv);
        r->vs = store_input(&r->lv, r->v, spec->dtype_kv);
    }
    if (has_rope_table(spec)) { /* exactly rope_rows rows: a read past them is caught */
        r->rope_cos = rope_table(spec, a->rope_rows, 0, &r->seed);
        r->rope_sin = rope_table(spec, a->rope_rows, 1, &r->seed);
        a->rope_cos = r->rope_cos;
        a->rope_sin = r->rope_sin;
    }
    r->o = make_output(&r->lo, r->odt);
    r->o_ref = (float *)make_output(&r->lo, ATTN_DTYPE_F32);
    if (r->has_mask && a->mask != NULL)
        run_mask(r);
}

/* The other tensors, each in a buffer of exactly its size: the relative
   position table, LSE (the gap sentinel), a linear kernel's state (the
   reference's a copy), the sinks, qk_norm's weights; the args point at all. */
static void run_extras(sdpa_run *r)
{
    const attn_spec *spec = r->spec;
    attn_args *a = r->a;
    const int64_t n_s = r->n_s, n_z = r->n_z;
    int64_t i, h, d;
    if (attn_rel_rows(spec) > 0) { /* the relative position table, exactly its size */
        const int64_t n_rel = (int64_t)attn_rel_rows(spec) * r->Hq;
        r->rel = (float *)alloc_elems(n_rel, sizeof(float));
        for (i = 0; i < n_rel; i++)
            r->rel[i] = 2.0f * rng_normal(&r->seed);
        a->rel_table = r->rel;
    }
    if (a->lse != NULL) {
        r->lse = (float *)alloc_elems(r->lse_count, sizeof(float));
        r->lse_ref = (float *)alloc_elems(r->lse_count, sizeof(float));
        for (i = 0; i < r->lse_count; i++)
            r->lse[i] = r->lse_ref[i] = bits_float(O_GAP_BITS);
    }
    a->q = r->qs;
    a->k = r->ks;
    a->v = r->vs;
    a->o = r->o;
    a->lse = r->lse;
    if (n_s > 0) { /* a random state, in buffers of exactly its size; the reference's a copy */
        r->st_s = (float *)alloc_elems(n_s, sizeof(float));
        r->st_z = (float *)alloc_elems(n_z, sizeof(float));
        r->s0 = (float *)alloc_elems(n_s, sizeof(float));
        r->z0 = (float *)alloc_elems(n_z, sizeof(float));
        r->ref_s = (float *)alloc_elems(n_s, sizeof(float));
        r->ref_z = (float *)alloc_elems(n_z, sizeof(float));
        for (i = 0; i < n_s; i++)
            r->st_s[i] = r->s0[i] = r->ref_s[i] = 4.0f * rng_normal(&r->seed);
        for (i = 0; i < n_z; i++)
            r->st_z[i] = r->z0[i] = r->ref_z[i] = 4.0f * fabsf(rng_normal(&r->seed)) + 1.0f;
        a->state_s = r->st_s;
        a->state_z = r->st_z;
    }
    if (!r->linear && spec->sinks) { /* a logit per query head, in a buffer of exactly that size */
        r->sinks = (float *)alloc_elems(r->Hq, sizeof(float));
        for (h = 0; h < r->Hq; h++)
            r->sinks[h] = 2.0f + 2.0f * rng_normal(&r->seed);
        a->sinks = r->sinks;
    }
    if (!r->linear && spec->qk_norm) { /* factors (offset + w) in 0.5..1.5, in a buffer of exactly D */
        r->norm_w = (float *)alloc_elems(r->D, sizeof(float));
        for (d = 0; d < r->D; d++)
            r->norm_w[d] = (spec->qk_norm_offset ? 0.0f : 1.0f) + 0.25f * rng_normal(&r->seed);
        a->q_norm_w = r->norm_w;
    }
}

/* The kernel's call, then the reference's on the stored inputs, widened. */
static void run_kernel_and_reference(sdpa_run *r, attn_fwd_fn fwd)
{
    const attn_args *a = r->a;
    attn_args *ref = &r->ref;
    attn_status st;

    st = fwd(r->a);
    if (st != ATTN_OK)
        die("accepted args, then the entry point returned '%s'", attn_status_string(st));
    *ref = *a; /* on the stored inputs, widened */
    ref->q = r->q;
    ref->k = r->k;
    ref->v = r->v;
    ref->o = r->o_ref;
    ref->lse = r->lse_ref;
    memcpy(ref->k_stride, r->lkw.str, sizeof ref->k_stride); /* in values */
    memcpy(ref->v_stride, r->lvw.str, sizeof ref->v_stride);
    if (r->n_s > 0) { /* (else B = 0: the poisoned pointers, never touched) */
        ref->state_s = r->ref_s;
        ref->state_z = r->ref_z;
    }
    st = attn_reference(r->spec, ref);
    if (st != ATTN_OK)
        die("the reference returned '%s' (B=%lld Lq=%lld Lk=%lld N=%lld; strides Q %lld %lld %lld, K %lld %lld %lld, "
            "V %lld %lld %lld, O %lld %lld %lld)", attn_status_string(st), (long long)r->B, (long long)r->Lq,
            (long long)r->Lk, (long long)a->num_pages, (long long)ref->q_stride[0], (long long)ref->q_stride[1],
            (long long)ref->q_stride[2], (long long)ref->k_stride[0], (long long)ref->k_stride[1],
            (long long)ref->k_stride[2], (long long)ref->v_stride[0], (long long)ref->v_stride[1],
            (long long)ref->v_stride[2], (long long)ref->o_stride[0], (long long)ref->o_stride[1],
            (long long)ref->o_stride[2]);
}

/* A linear kernel's state written back, within ATTN_REF_TOL_STATE of its
   terms; its buffers freed. */
static void run_check_state(sdpa_run *r)
{
    const int64_t n_s = r->n_s, n_z = r->n_z;
    double *s_abs, *z_abs;
    int64_t i;
    if (n_s <= 0)
        return;
    s_abs = (double *)alloc_elems(n_s, sizeof(double));
    z_abs = (double *)alloc_elems(n_z, sizeof(double));
    if (attn_reference_linear_state_bound(r->spec, &r->ref, r->s0, r->z0, s_abs, z_abs) != 0)
        die("attn_reference_linear_state_bound refused accepted args");
    for (i = 0; i < n_s + n_z; i++) {
        const int is_z = i >= n_s;
        const int64_t at = is_z ? i - n_s : i;
        const float x = is_z ? r->st_z[at] : r->st_s[at], ref = is_z ? r->ref_z[at] : r->ref_s[at];
        if (!close_enough(x, ref, ATTN_REF_TOL_STATE(is_z ? z_abs[at] : s_abs[at])))
            die("state_%c[%lld] = %.9g, reference %.9g (B=%lld Lq=%lld Lk=%lld)", is_z ? 'z' : 's',
                (long long)at, x, ref, (long long)r->B, (long long)r->Lq, (long long)r->Lk);
    }
    release(s_abs);
    release(z_abs);
    release(r->st_s);
    release(r->st_z);
    release(r->s0);
    release(r->z0);
    release(r->ref_s);
    release(r->ref_z);
}

/* Every logical element of O written and close to the reference (when O's
   elements alias each other, only that nothing else was written), and LSE. */
static void run_check_o(const sdpa_run *r)
{
    const attn_spec *spec = r->spec;
    const layout *lo = &r->lo;
    const attn_dtype odt = r->odt;
    const void *o = r->o;
    const float *o_ref = r->o_ref;
    const int64_t B = r->B, Lq = r->Lq, Lk = r->Lk, Hq = r->Hq, Dv = r->Dv;
    const int o_injective = injective(lo);
    unsigned char *written;
    int64_t bb, i, h, d;

    written = (unsigned char *)calloc((size_t)lo->span + 1, 1);
    if (written == NULL)
        die("out of memory");
    for (bb = 0; bb < B; bb++)
        for (i = 0; i < Lq; i++)
            for (h = 0; h < Hq; h++)
                for (d = 0; d < Dv; d++) {
                    const int64_t off = offset_of(lo, bb, i, h, d);
                    written[off] = 1;
                    if (o_injective && !close_enough(o_value(o, odt, off), o_ref[off], ATTN_REF_TOL_O(spec, o_ref[off])))
                        die("O[b=%lld][i=%lld][h=%lld][d=%lld] = %.9g (%s), reference %.9g "
                            "(B=%lld Lq=%lld Lk=%lld)",
                            (long long)bb, (long long)i, (long long)h, (long long)d,
                            o_value(o, odt, off), attn_dtype_name(odt), o_ref[off], (long long)B,
                            (long long)Lq, (long long)Lk);
                }
    for (i = 0; i < lo->span; i++) {
        if (!written[i] && o_bits(o, odt, i) != gap_bits(odt))
            die("wrote O's gap at offset %lld (B=%lld Lq=%lld Lk=%lld)", (long long)i,
                (long long)B, (long long)Lq, (long long)Lk);
    }
    free(written);
    for (i = 0; i < r->lse_count; i++)
        if (!close_enough(r->lse[i], r->lse_ref[i], ATTN_REF_TOL(ATTN_DTYPE_F32, r->lse_ref[i])))
            die("LSE[%lld] = %.9g, reference %.9g (B=%lld Lq=%lld Lk=%lld)", (long long)i,
                r->lse[i], r->lse_ref[i], (long long)B, (long long)Lq, (long long)Lk);
}

/* The buffers run_inputs and run_extras built (the state's are freed by run_check_state). */
static void run_release(sdpa_run *r)
{
    if (r->qs != r->q)
        release(r->qs);
    if (r->ks != r->k)
        release(r->ks);
    if (r->vs != r->v)
        release(r->vs);
    release(r->q);
    release(r->k);
    release(r->v);
    release(r->o);
    release(r->o_ref);
    if (r->lse != NULL) {
        release(r->lse);
        release(r->lse_ref);
    }
    if (r->mask != NULL)
        release(r->mask);
    if (r->sinks != NULL)
        release(r->sinks);
    if (r->rel != NULL)
        release(r->rel);
    if (r->norm_w != NULL)
        release(r->norm_w);
    if (r->rope_cos != NULL) {
        release(r->rope_cos);
        release(r->rope_sin);
    }
}

/* Step 3: run an accepted call on real buffers and compare with the reference. */
static void run_and_compare(const attn_spec *spec, attn_fwd_fn fwd, attn_args *a,
                            uint64_t seed, int sparse)
{
    sdpa_run r;
    if (!run_layouts(&r, spec, a, seed, sparse))
        return;
    run_inputs(&r);
    run_extras(&r);
    run_kernel_and_reference(&r, fwd);
    run_check_state(&r);
    run_check_o(&r);
    run_release(&r);
}

/* ---- the additive and luong families ------------------------------------- */

/*
 * A classic kernel (its entry takes attn_classic_args) gets its own decoding
 * of the same kind of input, after the kernel and entry bytes:
 *   flags  (1 byte: bits 0-2 S, H, C NULL; 3 A requested; 4 U given
 *          (additive); 5 seqlens_k NULL; 6 mask NULL; 7 one parameter NULL,
 *          the next byte picking which: W_s, W_h, W, v, b)
 *   batch, seq_q, seq_k (length fields)
 *   strides S {i, b}, H {j, b}, U {j, b}, C {i, b}, A {j, i, b},
 *           mask {j, i, b} (stride fields, innermost first)
 *   threads (1 byte, as int8), seed (4 bytes), seqlens_k[b] for b < 64
 * and the same three steps: attn_check_classic_args against the args'
 * faults, the entry point's status on rejected args with poisoned tensors,
 * and an accepted call on buffers of exactly its span (NaN gaps, C's and
 * A's gaps the sentinel) against attn_reference_classic within the bounds
 * of ATTN_REF_TOL_SCORE.
 */

static int classic_spec(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_ADDITIVE || spec->family == ATTN_FAMILY_LUONG;
}

/* Strides {outer..inner} of a tensor whose innermost dim has stride 1:
   n dims above it with extents ext_up (innermost first), decoded innermost
   first into str[n - 1], ..., str[0]. */
static void decode_strides_n(input *in, int64_t *str, int n, const int64_t *ext_up, int64_t inner, int unit_inner)
{
    int64_t ext[4], s[4];
    int d, k = 0;
    if (unit_inner) {
        ext[0] = inner;
        s[0] = 1;
        k = 1;
    }
    for (d = 0; d < n; d++) {
        str[n - 1 - d] = stride_field(in, k == 0 ? 1 : natural(ext, s, k));
        ext[k] = ext_up[d];
        s[k] = str[n - 1 - d];
        k++;
    }
}

static void classic_check_status(const attn_spec *spec, const attn_classic_args *a, attn_status st)
{
    const int additive = spec->family == ATTN_FAMILY_ADDITIVE;
    const attn_score sc = additive ? ATTN_SCORE_ADDITIVE : spec->score;
    const int has_mask = spec->mask == ATTN_MASK_BOOL, has_u = additive && a->u != NULL;
    const int null_arg = a->s == NULL || a->h == NULL || a->c == NULL ||
                         (additive && (a->w_s == NULL || a->v_attn == NULL || (!has_u && a->w_h == NULL))) ||
                         ((sc == ATTN_SCORE_GENERAL || sc == ATTN_SCORE_CONCAT) && a->w == NULL) ||
                         (sc == ATTN_SCORE_CONCAT && a->v_attn == NULL) ||
                         ((additive || sc == ATTN_SCORE_CONCAT) && spec->bias && a->b_attn == NULL) ||
                         (spec->padding && a->seqlens_k == NULL) || (has_mask && a->mask == NULL);
    const int bad_shape = a->batch < 0 || a->seq_q < 0 || a->seq_k < 0;
    const int bad_stride = any_negative(a->s_stride, 2) || any_negative(a->h_stride, 2) ||
                           any_negative(a->c_stride, 2) || (has_u && any_negative(a->u_stride, 2)) ||
                           (a->weights != NULL && any_negative(a->weights_stride, 3)) ||
                           (has_mask && any_negative(a->mask_stride, 3));
    int bad_seqlens = 0;
    int64_t b;

    if (spec->padding && !null_arg && !bad_shape && a->batch <= MAX_SEQLENS)
        for (b = 0; b < a->batch; b++)
            bad_seqlens |= a->seqlens_k[b] < 0 || a->seqlens_k[b] > a->seq_k;
    if ((st == ATTN_ERR_NULL_ARG) != null_arg)
        die("status '%s' but a required pointer is %s", attn_status_string(st), null_arg ? "NULL" : "not NULL");
    switch (st) {
    case ATTN_OK:
        if (bad_shape || bad_stride || a->threads < 0 || bad_seqlens)
            die("accepted bad args (shape %d, stride %d, threads %d, seqlens %d)", bad_shape, bad_stride, a->threads,
                bad_seqlens);
        break;
    case ATTN_ERR_NULL_ARG: break;
    case ATTN_ERR_SHAPE:
        if (!bad_shape) die("'%s' but no length is negative", attn_status_string(st));
        break;
    case ATTN_ERR_STRIDE:
        if (!bad_stride) die("'%s' but no stride is negative", attn_status_string(st));
        break;
    case ATTN_ERR_THREADS:
        if (a->threads >= 0) die("'%s' with threads = %d", attn_status_string(st), a->threads);
        break;
    case ATTN_ERR_SEQLENS:
        if (!spec->padding || (a->batch <= MAX_SEQLENS && !bad_seqlens))
            die("'%s' but every seqlens_k value is in range", attn_status_string(st));
        break;
    case ATTN_ERR_TOO_LARGE:
        if (a->batch < ((int64_t)1 << 24) && a->seq_q < ((int64_t)1 << 24) && a->seq_k < ((int64_t)1 << 24) &&
            all_below(a->s_stride, 2, (int64_t)1 << 28) && all_below(a->h_stride, 2, (int64_t)1 << 28) &&
            all_below(a->c_stride, 2, (int64_t)1 << 28) && (!has_u || all_below(a->u_stride, 2, (int64_t)1 << 28)) &&
            (a->weights == NULL || all_below(a->weights_stride, 3, (int64_t)1 << 28)) &&
            (!has_mask || all_below(a->mask_stride, 3, (int64_t)1 << 28)))
            die("'%s' for lengths below 2^24 and strides below 2^28", attn_status_string(st));
        break;
    default: die("attn_check_classic_args returned '%s' (%d)", attn_status_string(st), (int)st);
    }
}

/* n parameters uniform in +-1/sqrt(in), stored as dtype, exactly sized */
static void *classic_param(int64_t n, double in, attn_dtype dtype, uint64_t *rng)
{
    float *wide = (float *)alloc_elems(n, sizeof(float));
    uint16_t *stored;
    int64_t i;
    for (i = 0; i < n; i++)
        wide[i] = (float)((2.0 * rng_unit(rng) - 1.0) / sqrt(in));
    if (dtype == ATTN_DTYPE_F32)
        return wide;
    stored = (uint16_t *)alloc_elems(n, sizeof(uint16_t));
    attn_f32_to_dtype_array(dtype, wide, stored, (size_t)n);
    release(wide);
    return stored;
}

/* What the phases of a classic call's run share: the accepted call, its
   layouts, the buffers it runs on (the widened S, H and U) and the reference's. */
typedef struct {
    const attn_spec *spec;
    attn_classic_args *a;
    uint64_t seed; /* the random draws, in order: S, H, W_s, W_h or W, v, b, mask */
    int64_t B, Lq, Lk, Ds, Dh, Da;
    int additive, tanh_score, use_u;
    attn_score sc;
    layout ls, lh, lu, lc, la, lm;
    float *s_w, *h_w, *u_w, *ref_c, *ref_a;
    double *c_tol, *w_rel;
    void *c_buf, *params[5]; /* W_s, W_h, W, v, b */
    float *a_buf;
    uint8_t *m_buf;
} classic_call;

/* The call's shapes and layouts into r; 0 where it is too large to build
   and visit, or C's or A's elements alias (the input is skipped). */
static int classic_layouts(classic_call *r, const attn_spec *spec, attn_classic_args *a, uint64_t seed)
{
    const int64_t B = a->batch, Lq = a->seq_q, Lk = a->seq_k;
    const int64_t Ds = spec->query_dim, Dh = spec->key_dim, Da = spec->attn_dim;
    const int64_t zero3[3] = { 0, 0, 0 };
    int64_t str3[3];

    memset(r, 0, sizeof *r);
    r->spec = spec;
    r->a = a;
    r->seed = seed;
    r->B = B;
    r->Lq = Lq;
    r->Lk = Lk;
    r->Ds = Ds;
    r->Dh = Dh;
    r->Da = Da;
    r->additive = spec->family == ATTN_FAMILY_ADDITIVE;
    r->sc = r->additive ? ATTN_SCORE_ADDITIVE : spec->score;
    r->tanh_score = r->sc == ATTN_SCORE_ADDITIVE || r->sc == ATTN_SCORE_CONCAT;
    /* U is additive's: a luong kernel keeps the poisoned pointer it must not read */
    r->use_u = r->additive && a->u != NULL;

    /* as for the sdpa kinds: loops run over every (b, i) and (b, j) even
       when the other length is 0, and a stride of 0 makes a tensor's
       logical elements (each visited) many more than its span */
    if (sat_mul(sat_mul(sat_mul(B, Lq > 0 ? Lq : 1), Lk > 0 ? Lk : 1), Ds + Dh + Da + 1) > MAX_WORK ||
        B > MAX_LENGTH || Lq > MAX_LENGTH || Lk > MAX_LENGTH)
        return 0;
    str3[0] = a->s_stride[0];
    str3[1] = a->s_stride[1];
    str3[2] = 0;
    set_layout(&r->ls, B, Lq, 1, Ds, str3, 1);
    str3[0] = a->h_stride[0];
    str3[1] = a->h_stride[1];
    set_layout(&r->lh, B, Lk, 1, Dh, str3, 1);
    str3[0] = a->u_stride[0];
    str3[1] = a->u_stride[1];
    set_layout(&r->lu, B, Lk, 1, r->use_u ? Da : 0, str3, 1);
    str3[0] = a->c_stride[0];
    str3[1] = a->c_stride[1];
    set_layout(&r->lc, B, Lq, 1, Dh, str3, 1);
    set_layout(&r->la, B, Lq, a->weights != NULL ? Lk : 0, 1, a->weights != NULL ? a->weights_stride : zero3, 1);
    set_layout(&r->lm, B, Lq, spec->mask == ATTN_MASK_BOOL ? Lk : 0, 1,
               spec->mask == ATTN_MASK_BOOL ? a->mask_stride : zero3, 1);
    return !(too_large(&r->ls) || too_large(&r->lh) || too_large(&r->lu) || too_large(&r->lc) ||
             too_large(&r->la) || too_large(&r->lm) || !injective(&r->lc) || !injective(&r->la));
}

/* The parameters the score reads, uniform in +-1/sqrt(fan in), stored as K's type. */
static void classic_params(classic_call *r)
{
    const attn_spec *spec = r->spec;
    attn_classic_args *a = r->a;
    const int64_t Ds = r->Ds, Dh = r->Dh, Da = r->Da;
    const attn_score sc = r->sc;
    if (r->additive) {
        r->params[0] = classic_param(Da * Ds, (double)Ds, spec->dtype_kv, &r->seed);
        r->params[1] = classic_param(Da * Dh, (double)Dh, spec->dtype_kv, &r->seed);
        a->w_s = r->params[0];
        a->w_h = r->use_u ? NULL : r->params[1];
    } else if (sc == ATTN_SCORE_GENERAL || sc == ATTN_SCORE_CONCAT) {
        r->params[2] = sc == ATTN_SCORE_GENERAL ? classic_param(Dh * Ds, (double)Ds, spec->dtype_kv, &r->seed)
                                                : classic_param(Da * (Dh + Ds), (double)(Dh + Ds), spec->dtype_kv, &r->seed);
        a->w = r->params[2];
    }
    if (r->tanh_score) {
        r->params[3] = classic_param(Da, (double)Da, spec->dtype_kv, &r->seed);
        a->v_attn = r->params[3];
        if (spec->bias) {
            r->params[4] = classic_param(Da, (double)Ds, spec->dtype_kv, &r->seed);
            a->b_attn = r->params[4];
        }
    }
}

/* S and H N(0,1) with NaN gaps (H NaN past seqlens_k too), the
   parameters, U from H and a random W_h, a random mask; C and A the
   gap sentinel. */
static void classic_inputs(classic_call *r)
{
    const attn_spec *spec = r->spec;
    attn_classic_args *a = r->a;
    const layout *lh = &r->lh, *lu = &r->lu;
    const int64_t B = r->B, Lk = r->Lk, Dh = r->Dh, Da = r->Da;
    int64_t b, j, d, p;
    int k;

    r->s_w = make_input(&r->ls, &r->seed);
    r->h_w = make_input(lh, &r->seed);
    for (b = 0; b < B && spec->padding; b++)
        for (j = a->seqlens_k[b]; j < Lk; j++)
            for (d = 0; d < Dh; d++) r->h_w[offset_of(lh, b, j, 0, d)] = NAN;
    a->s = store_input(&r->ls, r->s_w, spec->dtype_q);
    a->h = store_input(lh, r->h_w, spec->dtype_kv);
    classic_params(r);
    if (r->use_u) { /* U = H W_h^T from the stored values; NaN gaps */
        r->u_w = (float *)alloc_elems(lu->span, sizeof(float));
        for (p = 0; p < lu->span; p++) r->u_w[p] = NAN;
        for (b = 0; b < B; b++)
            for (j = 0; j < (spec->padding ? a->seqlens_k[b] : Lk); j++)
                for (k = 0; k < Da; k++) {
                    double sum = 0.0;
                    for (d = 0; d < Dh; d++)
                        sum += (double)o_value(r->params[1], spec->dtype_kv, k * Dh + d) *
                               (double)r->h_w[offset_of(lh, b, j, 0, d)];
                    r->u_w[offset_of(lu, b, j, 0, k)] = (float)sum;
                }
        a->u = store_input(lu, r->u_w, spec->dtype_kv);
    }
    if (spec->mask == ATTN_MASK_BOOL) {
        r->m_buf = (uint8_t *)alloc_elems(r->lm.span, 1);
        for (p = 0; p < r->lm.span; p++) r->m_buf[p] = (uint8_t)(rng_next(&r->seed) % 5 != 0);
        a->mask = r->m_buf;
    }
    r->c_buf = make_output(&r->lc, spec->dtype_o);
    a->c = r->c_buf;
    if (a->weights != NULL) {
        r->a_buf = (float *)make_output(&r->la, ATTN_DTYPE_F32);
        a->weights = r->a_buf;
    }
}

/* The kernel's call, then the reference's C and A (f32, contiguous) and
   their bounds. */
static void classic_kernel_and_reference(classic_call *r, attn_classic_fwd_fn fwd)
{
    const int64_t B = r->B, Lq = r->Lq, Lk = r->Lk, Dh = r->Dh;
    attn_spec ref_spec;
    attn_classic_args ra;
    attn_status st;

    st = fwd(r->a);
    if (st != ATTN_OK)
        die("accepted args, then the call returned '%s'", attn_status_string(st));

    r->ref_c = (float *)alloc_elems(B * Lq * Dh + 1, sizeof(float));
    r->ref_a = (float *)alloc_elems(B * Lq * Lk + 1, sizeof(float));
    r->c_tol = (double *)alloc_elems(B * Lq * Dh + 1, sizeof(double));
    r->w_rel = (double *)alloc_elems(B * Lq + 1, sizeof(double));
    ref_spec = *r->spec;
    ref_spec.dtype_o = ATTN_DTYPE_F32;
    ra = *r->a;
    ra.c = r->ref_c;
    ra.weights = r->ref_a;
    /* with B = 0 there is nothing to compare: only C's and A's gaps are checked */
    if (B > 0) {
        ra.c_stride[1] = Dh;
        ra.c_stride[0] = Lq * Dh;
        ra.weights_stride[2] = 1;
        ra.weights_stride[1] = Lk;
        ra.weights_stride[0] = Lq * Lk;
        if (attn_reference_classic(&ref_spec, &ra) != ATTN_OK ||
            attn_reference_classic_bounds(r->spec, &ra, r->c_tol, r->w_rel) != ATTN_OK)
            die("the reference rejected args the kernel accepted");
    }
}

/* C and A against the reference, within its bounds; a row that sees no key 0. */
static void classic_compare(const classic_call *r)
{
    const attn_spec *spec = r->spec;
    const int64_t B = r->B, Lq = r->Lq, Lk = r->Lk, Dh = r->Dh;
    const float *ref_c = r->ref_c, *ref_a = r->ref_a, *a_buf = r->a_buf;
    int64_t b, i, j, d;

    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++) {
            int sees = 0;
            for (j = 0; j < Lk && !sees; j++) sees = attn_reference_classic_key_visible(spec, r->a, b, i, j);
            for (d = 0; d < Dh; d++) {
                const int64_t at = (b * Lq + i) * Dh + d;
                const float x = o_value(r->c_buf, spec->dtype_o, offset_of(&r->lc, b, i, 0, d));
                if (!close_enough(x, ref_c[at], r->c_tol[at]) || (!sees && x != 0.0f))
                    die("C[%lld][%lld][%lld] = %.9g, reference %.9g (B %lld Lq %lld Lk %lld)", (long long)b, (long long)i,
                        (long long)d, (double)x, (double)ref_c[at], (long long)B, (long long)Lq, (long long)Lk);
            }
            for (j = 0; j < Lk && a_buf != NULL; j++) {
                const float x = a_buf[offset_of(&r->la, b, i, j, 0)], ref = ref_a[(b * Lq + i) * Lk + j];
                if (!close_enough(x, ref, ATTN_REF_TOL_P(ref) + r->w_rel[b * Lq + i] * fabs((double)ref)) ||
                    (ref == 0.0f && x != 0.0f))
                    die("A[%lld][%lld][%lld] = %.9g, reference %.9g", (long long)b, (long long)i, (long long)j, (double)x,
                        (double)ref);
            }
        }
}

/* C's and A's gaps still hold the sentinel. */
static void classic_check_gaps(const classic_call *r)
{
    const attn_spec *spec = r->spec;
    const layout *lc = &r->lc, *la = &r->la;
    const int64_t B = r->B, Lq = r->Lq, Lk = r->Lk, Dh = r->Dh;
    const float *a_buf = r->a_buf;
    unsigned char *seen = (unsigned char *)calloc((size_t)(lc->span > la->span ? lc->span : la->span) + 1, 1);
    int64_t b, i, j, d, p;

    if (seen == NULL) die("out of memory");
    for (b = 0; b < B; b++)
        for (i = 0; i < Lq; i++)
            for (d = 0; d < Dh; d++) seen[offset_of(lc, b, i, 0, d)] = 1;
    for (p = 0; p < lc->span; p++)
        if (!seen[p] && o_bits(r->c_buf, spec->dtype_o, p) != gap_bits(spec->dtype_o))
            die("C's gap at %lld was written", (long long)p);
    memset(seen, 0, (size_t)la->span + 1);
    for (b = 0; b < B && a_buf != NULL; b++)
        for (i = 0; i < Lq; i++)
            for (j = 0; j < Lk; j++) seen[offset_of(la, b, i, j, 0)] = 1;
    for (p = 0; p < la->span && a_buf != NULL; p++)
        if (!seen[p] && o_bits(a_buf, ATTN_DTYPE_F32, p) != O_GAP_BITS)
            die("A's gap at %lld was written", (long long)p);
    free(seen);
}

/* The buffers classic_inputs and classic_kernel_and_reference built. */
static void classic_release(classic_call *r)
{
    const attn_classic_args *a = r->a;
    int k;
    free(r->ref_c);
    free(r->ref_a);
    free(r->c_tol);
    free(r->w_rel);
    if (a->s != (const void *)r->s_w) release((void *)a->s);
    if (a->h != (const void *)r->h_w) release((void *)a->h);
    if (r->u_w != NULL && a->u != (const void *)r->u_w) release((void *)a->u);
    release(r->s_w);
    release(r->h_w);
    if (r->u_w != NULL) release(r->u_w);
    for (k = 0; k < 5; k++)
        if (r->params[k] != NULL) release(r->params[k]);
    release(r->c_buf);
    if (r->a_buf != NULL) release(r->a_buf);
    if (r->m_buf != NULL) release(r->m_buf);
}

static void classic_run_and_compare(const attn_spec *spec, attn_classic_fwd_fn fwd, attn_classic_args *a,
                                    uint64_t seed)
{
    classic_call r;
    if (!classic_layouts(&r, spec, a, seed))
        return;
    classic_inputs(&r);
    classic_kernel_and_reference(&r, fwd);
    classic_compare(&r);
    classic_check_gaps(&r);
    classic_release(&r);
}

static int classic_one(const attn_kernel *kernel, input *in, unsigned entry)
{
    const attn_spec *spec = &kernel->spec;
    attn_classic_fwd_fn fwd = kernel->classic_fwd;
    attn_classic_args a;
    unsigned flags, which = 0;
    int32_t *seqlens = NULL;
    int64_t ext[3];
    uint64_t seed = 0;
    attn_status st, st2;
    int i;

    cur_entry = "entry point";
    if (entry > 0 && kernel->n_variants > 0) {
        const attn_variant *var = &kernel->variants[(entry - 1) % (unsigned)kernel->n_variants];
        if (attn_isa_supported(var->isa)) {
            fwd = var->classic_fwd;
            cur_entry = attn_isa_name(var->isa);
        }
    }
    flags = next_byte(in);
    if (flags & 128) which = next_byte(in) % 5;
    memset(&a, 0, sizeof a);
    a.batch = length_field(in);
    a.seq_q = length_field(in);
    a.seq_k = length_field(in);
    ext[0] = a.seq_q;
    ext[1] = a.batch;
    decode_strides_n(in, a.s_stride, 2, ext, spec->query_dim, 1);
    ext[0] = a.seq_k;
    decode_strides_n(in, a.h_stride, 2, ext, spec->key_dim, 1);
    decode_strides_n(in, a.u_stride, 2, ext, spec->attn_dim, 1);
    ext[0] = a.seq_q;
    decode_strides_n(in, a.c_stride, 2, ext, spec->key_dim, 1);
    ext[0] = a.seq_k;
    ext[1] = a.seq_q;
    ext[2] = a.batch;
    decode_strides_n(in, a.weights_stride, 3, ext, 0, 0);
    decode_strides_n(in, a.mask_stride, 3, ext, 0, 0);
    a.threads = (int)(int8_t)next_byte(in);
    for (i = 0; i < 4; i++) seed |= (uint64_t)next_byte(in) << (8 * i);

    /* pointers: NULL, or poisoned memory no access may touch */
    a.s = (flags & 1) ? NULL : poisoned();
    a.h = (flags & 2) ? NULL : poisoned();
    a.c = (flags & 4) ? NULL : poisoned();
    a.weights = (flags & 8) ? (float *)poisoned() : NULL;
    a.u = (flags & 16) ? poisoned() : NULL;
    a.mask = (flags & 64) ? NULL : (const uint8_t *)poisoned();
    a.w_s = (flags & 128) && which == 0 ? NULL : poisoned();
    a.w_h = (flags & 128) && which == 1 ? NULL : poisoned();
    a.w = (flags & 128) && which == 2 ? NULL : poisoned();
    a.v_attn = (flags & 128) && which == 3 ? NULL : poisoned();
    a.b_attn = (flags & 128) && which == 4 ? NULL : poisoned();
    if (!(flags & 32)) {
        if (spec->padding && a.batch > 0 && a.batch <= MAX_SEQLENS) {
            const int32_t full = (int32_t)(a.seq_k < 0 ? 0 : a.seq_k > INT32_MAX ? INT32_MAX : a.seq_k);
            int64_t b;
            seqlens = (int32_t *)malloc((size_t)a.batch * sizeof *seqlens);
            if (seqlens == NULL) die("out of memory");
            for (b = 0; b < a.batch; b++) seqlens[b] = b < SEQLEN_FIELDS ? seqlen_field(in, a.seq_k) : full;
            a.seqlens_k = seqlens;
        } else if (spec->padding && a.batch > MAX_SEQLENS && a.batch <= ((int64_t)1 << 62)) {
            return 0;
        } else {
            a.seqlens_k = (const int32_t *)poisoned();
        }
    }

    st = attn_check_classic_args(spec, &a);
    classic_check_status(spec, &a, st);
    if (st != ATTN_OK) {
        st2 = fwd(&a);
        if (st2 != st)
            die("attn_check_classic_args says '%s', the entry point '%s'", attn_status_string(st),
                attn_status_string(st2));
    } else if (a.s != NULL) {
        classic_run_and_compare(spec, fwd, &a, seed);
    }
    free(seqlens);
    return 0;
}

/*
 * A paged kernel's block table, after the seqlens fields: num_pages (a length
 * field; 0: B * ceil(seq_k / P), a page for each of every sequence's), the
 * table's row stride (a stride field over ceil(seq_k / P) entries), and a byte
 * of faults: bit 0 the table NULL; bit 1 the first (next byte) % 4 pages of
 * each sequence evicted (-1: legal only where no row sees a key of them);
 * bit 2 one entry (the next byte picks which) naming no page: num_pages, -2 or
 * INT32_MAX by the byte after.  The entries are the pages 0..N-1 shuffled by
 * the seed (wrapping around where the sequences have more pages than N).  The
 * table is allocated exactly to its last entry a call may read; returns 0 where
 * it would be too large to build (the input is skipped).
 */
static int paged_table(input *in, const attn_spec *spec, attn_args *a, uint64_t seed, int32_t **out)
{
    const int64_t P = spec->page, lk = a->seq_k > 0 && a->seq_k < MAX_LENGTH ? a->seq_k : 0;
    const int64_t npb = (lk + P - 1) / P; /* pages a sequence at most (seqlens_k <= seq_k) */
    int64_t n = length_field(in), stride, count, i, b, e;
    unsigned faults;
    int32_t *t, *perm = NULL;
    if (n == 0)
        n = sat_mul(a->batch > 0 ? a->batch : 0, npb);
    stride = stride_field(in, npb);
    faults = next_byte(in);
    a->num_pages = n;
    a->block_table_stride = stride;
    *out = NULL;
    if (faults & 1) {
        a->block_table = NULL;
        return 1;
    }
    if (a->seq_k >= MAX_LENGTH && a->batch > 0)
        return 0; /* a table of that many pages is not built */
    if (a->batch <= 0 || npb == 0 || stride < 0) { /* no entry is read (or the args fail first) */
        a->block_table = (const int32_t *)poisoned();
        return 1;
    }
    if (a->batch > MAX_SEQLENS || stride > MAX_ELEMS)
        return 0;
    count = (a->batch - 1) * stride + npb;
    t = (int32_t *)alloc_elems(count, sizeof *t);
    if (n > 0 && n <= MAX_ELEMS) { /* a shuffled order of the pages */
        perm = (int32_t *)alloc_elems(n, sizeof *perm);
        for (i = 0; i < n; i++)
            perm[i] = (int32_t)i;
        for (i = n - 1; i > 0; i--) {
            const int64_t k = (int64_t)(rng_next(&seed) % (uint64_t)(i + 1));
            const int32_t x = perm[i];
            perm[i] = perm[k];
            perm[k] = x;
        }
    }
    for (i = 0; i < count; i++)
        t[i] = -3; /* between rows: never read */
    for (b = 0; b < a->batch; b++)
        for (e = 0; e < npb; e++) {
            const int64_t k = b * npb + e;
            t[b * stride + e] = n <= 0 ? 0 : perm ? perm[k % n] : (int32_t)(k % (n < INT32_MAX ? n : INT32_MAX));
        }
    if (faults & 2) {
        const int64_t ev = next_byte(in) % 4;
        for (b = 0; b < a->batch; b++)
            for (e = 0; e < ev && e < npb; e++)
                t[b * stride + e] = -1;
    }
    if (faults & 4) {
        const int64_t at = next_byte(in) % count;
        const unsigned kind = next_byte(in) % 3;
        t[at] = kind == 0 && n <= INT32_MAX ? (int32_t)n : kind == 1 ? -2 : INT32_MAX;
    }
    if (perm != NULL)
        release(perm);
    a->block_table = t;
    *out = t;
    return 1;
}

/*
 * A rope-table kernel's table, last: rope_rows, a byte m (m < 0x80: the rows the
 * call's positions need, plus ((m & 7) ^ 4) - 4, so 0 is exactly those, -4..-1 too
 * few (ATTN_ERR_ROPE), 1..3 to spare; 0x80..0xEF: m - 0x80; then as for lengths),
 * and a byte of faults: bit 0 rope_cos NULL, bit 1 rope_sin NULL.  Before the run
 * the tables point at poisoned memory; an accepted call gets tables of exactly
 * rope_rows rows.
 */
static void rope_fields(input *in, const attn_spec *spec, attn_args *a, const int32_t *seqlens)
{
    int64_t need, rows, b;
    unsigned m, faults;
    if (spec->top_left) /* positions 0..Lq-1 */
        need = a->seq_q;
    else if (spec->padding && seqlens != NULL) /* Lk_b - Lq..Lk_b - 1 */
        for (need = 0, b = 0; b < a->batch; b++)
            need = seqlens[b] > need ? seqlens[b] : need;
    else
        need = a->seq_k;
    need = need < 0 ? 0 : need > MAX_LENGTH ? MAX_LENGTH : need;
    m = next_byte(in);
    if (m < 0x80)
        rows = need + (int64_t)((m & 7) ^ 4) - 4;
    else if (m < 0xF0)
        rows = m - 0x80;
    else if (m < 0xF8)
        rows = special[m - 0xF0];
    else
        rows = next_i64(in);
    faults = next_byte(in);
    a->rope_rows = rows;
    a->rope_cos = (faults & 1) ? NULL : (const float *)poisoned();
    a->rope_sin = (faults & 2) ? NULL : (const float *)poisoned();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in;
    const attn_kernel *kernel;
    const attn_spec *spec;
    attn_fwd_fn fwd;
    attn_args a;
    unsigned entry, flags;
    int32_t *seqlens = NULL, *table = NULL;
    int64_t ext4[4];
    uint64_t seed = 0;
    attn_status st, st2;
    int i;

    in.p = data;
    in.end = data + size;
    kernel = kernels[next_byte(&in) % N_KERNELS];
    spec = &kernel->spec;
    cur_kernel = kernel;
    entry = next_byte(&in);
    if (classic_spec(spec))
        return classic_one(kernel, &in, entry);
    fwd = kernel->fwd;
    cur_entry = "entry point";
    if (entry > 0 && kernel->n_variants > 0) {
        const attn_variant *var = &kernel->variants[(entry - 1) % (unsigned)kernel->n_variants];
        if (attn_isa_supported(var->isa)) {
            fwd = var->fwd;
            cur_entry = attn_isa_name(var->isa);
        }
    }
    flags = next_byte(&in);

    memset(&a, 0, sizeof a);
    a.batch = length_field(&in);
    a.seq_q = length_field(&in);
    a.seq_k = length_field(&in);
    decode_strides3(&in, a.q_stride, a.seq_q, spec->heads_q, spec->head_dim);
    if (spec->family == ATTN_FAMILY_SDPA && spec->page > 0) { /* the pools: {page, slot, head} */
        const int hnd = spec->page_order == ATTN_PAGE_HND;
        int64_t s[3];
        decode_strides3(&in, s, hnd ? spec->heads_kv : spec->page, hnd ? spec->page : spec->heads_kv,
                        spec->head_dim / kv_values(spec));
        a.k_stride[0] = s[0], a.k_stride[1] = s[hnd ? 2 : 1], a.k_stride[2] = s[hnd ? 1 : 2];
        decode_strides3(&in, s, hnd ? spec->heads_kv : spec->page, hnd ? spec->page : spec->heads_kv,
                        spec->head_dim_v / kv_values(spec));
        a.v_stride[0] = s[0], a.v_stride[1] = s[hnd ? 2 : 1], a.v_stride[2] = s[hnd ? 1 : 2];
    } else {
        decode_strides3(&in, a.k_stride, a.seq_k, spec->heads_kv, spec->head_dim / kv_values(spec));
        decode_strides3(&in, a.v_stride, a.seq_k, spec->heads_kv, spec->head_dim_v / kv_values(spec));
    }
    decode_strides3(&in, a.o_stride, a.seq_q, spec->heads_q, spec->head_dim_v);
    ext4[0] = a.batch;
    ext4[1] = spec->heads_q;
    ext4[2] = a.seq_q;
    ext4[3] = a.seq_k;
    decode_strides4(&in, a.mask_stride, ext4);
    a.threads = (int)(int8_t)next_byte(&in);
    for (i = 0; i < 4; i++)
        seed |= (uint64_t)next_byte(&in) << (8 * i);

    /* pointers: NULL, or poisoned memory no access may touch */
    a.q = (flags & 1) ? NULL : poisoned();
    a.k = (flags & 2) ? NULL : poisoned();
    a.v = (flags & 4) ? NULL : poisoned();
    a.o = (flags & 8) ? NULL : poisoned();
    a.lse = (flags & 16) ? (float *)poisoned() : NULL;
    a.mask = (flags & 64) ? NULL : poisoned();
    if (attn_rel_rows(spec) > 0) /* bit 6 too: the relative position table */
        a.rel_table = (flags & 64) ? NULL : (const float *)poisoned();
    if (spec->family == ATTN_FAMILY_LINEAR && spec->state) { /* bits 6 and 7: the state's pointers */
        a.state_s = (flags & 64) ? NULL : (float *)poisoned();
        a.state_z = (flags & 128) ? NULL : (float *)poisoned();
    }
    if (spec->family != ATTN_FAMILY_LINEAR && spec->sinks) /* bit 6 too: the sinks' pointer */
        a.sinks = (flags & 64) ? NULL : (const float *)poisoned();
    if (spec->family != ATTN_FAMILY_LINEAR && spec->qk_norm) /* bit 6 too: qk_norm's weights */
        a.q_norm_w = (flags & 64) ? NULL : (const float *)poisoned();
    if (!(flags & 32)) {
        if (spec->padding && a.batch > 0 && a.batch <= MAX_SEQLENS) {
            const int32_t full = (int32_t)(a.seq_k < 0 ? 0 : a.seq_k > INT32_MAX ? INT32_MAX
                                                                                : a.seq_k);
            int64_t b;
            seqlens = (int32_t *)malloc((size_t)a.batch * sizeof *seqlens);
            if (seqlens == NULL)
                die("out of memory");
            for (b = 0; b < a.batch; b++)
                seqlens[b] = b < SEQLEN_FIELDS ? seqlen_field(&in, a.seq_k) : full;
            a.seqlens_k = seqlens;
        } else if (spec->padding && a.batch > MAX_SEQLENS && a.batch <= ((int64_t)1 << 62)) {
            return 0; /* attn_check_args may read batch entries: we cannot provide them */
        } else {
            a.seqlens_k = (const int32_t *)poisoned();
        }
    }
    if (spec->family == ATTN_FAMILY_SDPA && spec->page > 0 && !paged_table(&in, spec, &a, seed ^ 0x5eedu, &table)) {
        free(seqlens);
        return 0;
    }

    if (has_rope_table(spec))
        rope_fields(&in, spec, &a, seqlens);

    st = attn_check_args(spec, &a);
    check_status(spec, &a, st);
    if (st != ATTN_OK) {
        st2 = fwd(&a);
        if (st2 != st)
            die("attn_check_args says '%s', the entry point '%s'", attn_status_string(st),
                attn_status_string(st2));
    } else if (a.q != NULL) {
        run_and_compare(spec, fwd, &a, seed, (flags & 128) != 0);
    }
    free(seqlens);
    if (table != NULL)
        release(table);
    return 0;
}
