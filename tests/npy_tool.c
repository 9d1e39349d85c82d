/*
 * npy_tool.c - makes and compares .npy files for the busted specs
 * (tests/spec/cli_spec.lua drives `attngen run` with them).
 *
 *   npy_tool random OUT.npy DTYPE SEED DIM...   random array of shape DIM...
 *       f32, f64: N(0,1) (Box-Muller on a splitmix64 stream)
 *       f16:      the same N(0,1) values rounded to float16 (nearest even)
 *       b1, u1:   a keep-mask, each element 1 with probability 0.8
 *       i32:      integers in -100..100
 *   npy_tool ints OUT.npy V1 V2 ...              a 1-D int32 array of the values
 *   npy_tool table OUT.npy ROWS V1 V2 ...        a 2-D int32 array of the values, ROWS rows
 *                                                (a paged config's block table)
 *   npy_tool compare A.npy B.npy [TYPE]          A against the reference B
 *
 * compare: same shape, float16/float32/float64 data; element i passes when
 *   |a - b| <= ATOL + RTOL * |b|   (the tolerance of docs/testing.md,
 *                                   ATTN_REF_TOL of attn_reference.h)
 * or both are NaN, or both are the same infinity.  RTOL is the one of an
 * output stored as TYPE (f32, bf16 or f16), by default the one A shows:
 * f16 when A is float16 (`attngen run` writes an f16 O so), bf16 when A is
 * float32 and every element of A is a bf16 value (`attngen run` writes a
 * bf16 O widened; an f32 O of more than a few elements is never all bf16
 * values by chance), else f32.  Prints the worst ratio
 * |a - b| / (ATOL + RTOL |b|) (1 is the limit) and the first failing index;
 * exit code 0 when every element passes, 1 when one does not, 2 for bad
 * usage or unreadable files.
 *
 * Build: cc -std=c99 -O2 -Iruntime tests/npy_tool.c runtime/attn_npy.c -lm
 * (attn_reference.h only for its tolerance macros: nothing else to link;
 * the float16 conversions here are this tool's own, from the definition).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_npy.h"
#include "attn_reference.h"

#define ATOL ATTN_REF_TOL_ABS

static int usage(void)
{
    fputs("usage: npy_tool random OUT.npy f16|f32|f64|b1|u1|i32 SEED DIM...\n"
          "       npy_tool ints OUT.npy V1 V2 ...\n"
          "       npy_tool table OUT.npy ROWS V1 V2 ...\n"
          "       npy_tool compare A.npy REF.npy [f32|bf16|f16]\n",
          stderr);
    return 2;
}

/* splitmix64: a tiny, well-mixed generator; the seed fixes the stream */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1): never 0, so log() below is finite */
static double next_unit(uint64_t *state)
{
    return ((double)(next_u64(state) >> 11) + 0.5) / 9007199254740992.0;
}

static double next_normal(uint64_t *state)
{
    const double u1 = next_unit(state), u2 = next_unit(state);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* float16 from its definition: value of a pattern, and x rounded to the
   nearest (ties to even) float16, +-inf from 65520 on. */
static double f16_value(uint16_t h)
{
    const int e = (h >> 10) & 31, m = h & 1023;
    const double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f16_from_double(double x)
{
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double a = fabs(x);
    double q, r;
    int e;
    if (isnan(x))
        return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0)
        return (uint16_t)(sign | 0x7c00);
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    q = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10); /* the spacing there */
    r = rint(a / q) * q; /* nearest, ties to even (the default rounding mode) */
    if (r < ldexp(1.0, -14))
        return (uint16_t)(sign | (uint16_t)(r / ldexp(1.0, -24)));
    frexp(r, &e);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((r / ldexp(1.0, e - 1) - 1.0) * 1024.0));
}

static int parse_i64(const char *s, long long *out)
{
    char *end;
    *out = strtoll(s, &end, 10);
    return end != s && *end == '\0' ? 0 : -1;
}

static int write_array(const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                       const void *data)
{
    char err[256];
    if (attn_npy_write(path, dtype, ndim, shape, data, err, sizeof err) != 0) {
        fprintf(stderr, "npy_tool: %s: %s\n", path, err);
        return 2;
    }
    return 0;
}

static int cmd_random(int argc, char **argv)
{
    const char *out = argv[2], *dt = argv[3];
    int64_t shape[ATTN_NPY_MAX_DIMS];
    int ndim = argc - 5, i, rc;
    size_t count = 1, n;
    long long seed, v;
    uint64_t state;
    attn_npy_dtype dtype;
    void *data;

    if (ndim < 0 || ndim > ATTN_NPY_MAX_DIMS || parse_i64(argv[4], &seed) != 0)
        return usage();
    if (strcmp(dt, "f16") == 0) dtype = ATTN_NPY_F16;
    else if (strcmp(dt, "f32") == 0) dtype = ATTN_NPY_F32;
    else if (strcmp(dt, "f64") == 0) dtype = ATTN_NPY_F64;
    else if (strcmp(dt, "b1") == 0) dtype = ATTN_NPY_BOOL;
    else if (strcmp(dt, "u1") == 0) dtype = ATTN_NPY_U8;
    else if (strcmp(dt, "i32") == 0) dtype = ATTN_NPY_I32;
    else return usage();
    for (i = 0; i < ndim; i++) {
        if (parse_i64(argv[5 + i], &v) != 0 || v < 0 || v > 1000000)
            return usage();
        shape[i] = v;
        count *= (size_t)v;
    }
    data = malloc(count * attn_npy_itemsize(dtype) + 1);
    if (data == NULL) {
        fputs("npy_tool: out of memory\n", stderr);
        return 2;
    }
    state = (uint64_t)seed;
    for (n = 0; n < count; n++) {
        switch (dtype) {
        case ATTN_NPY_F16: ((uint16_t *)data)[n] = f16_from_double(next_normal(&state)); break;
        case ATTN_NPY_F32: ((float *)data)[n] = (float)next_normal(&state); break;
        case ATTN_NPY_F64: ((double *)data)[n] = next_normal(&state); break;
        case ATTN_NPY_BOOL:
        case ATTN_NPY_U8:
            ((unsigned char *)data)[n] = next_unit(&state) < 0.8 ? 1 : 0;
            break;
        case ATTN_NPY_I32:
            ((int32_t *)data)[n] = (int32_t)(next_u64(&state) % 201) - 100;
            break;
        case ATTN_NPY_I64: break; /* not offered */
        }
    }
    rc = write_array(out, dtype, ndim, shape, data);
    free(data);
    return rc;
}

static int cmd_ints(int argc, char **argv)
{
    int64_t shape[1];
    int32_t *data;
    long long v;
    int i, rc;

    shape[0] = argc - 3;
    data = (int32_t *)malloc((size_t)shape[0] * sizeof *data + 1);
    if (data == NULL)
        return 2;
    for (i = 3; i < argc; i++) {
        if (parse_i64(argv[i], &v) != 0 || v < INT32_MIN || v > INT32_MAX) {
            free(data);
            return usage();
        }
        data[i - 3] = (int32_t)v;
    }
    rc = write_array(argv[2], ATTN_NPY_I32, 1, shape, data);
    free(data);
    return rc;
}

/* table OUT ROWS V...: the values as int32 [ROWS][count / ROWS] */
static int cmd_table(int argc, char **argv)
{
    int64_t shape[2];
    int32_t *data;
    long long v, rows;
    int i, rc;

    if (parse_i64(argv[3], &rows) != 0 || rows < 1 || (argc - 4) % rows != 0)
        return usage();
    shape[0] = rows;
    shape[1] = (argc - 4) / rows;
    data = (int32_t *)malloc((size_t)(argc - 4) * sizeof *data + 1);
    if (data == NULL)
        return 2;
    for (i = 4; i < argc; i++) {
        if (parse_i64(argv[i], &v) != 0 || v < INT32_MIN || v > INT32_MAX) {
            free(data);
            return usage();
        }
        data[i - 4] = (int32_t)v;
    }
    rc = write_array(argv[2], ATTN_NPY_I32, 2, shape, data);
    free(data);
    return rc;
}

static double element(const attn_npy *a, size_t i)
{
    if (a->dtype == ATTN_NPY_F16)
        return f16_value(((const uint16_t *)a->data)[i]);
    return a->dtype == ATTN_NPY_F32 ? (double)((const float *)a->data)[i]
                                    : ((const double *)a->data)[i];
}

/* Whether every element of a float32 array is a bf16 value (its low 16 bits 0). */
static int all_bf16(const attn_npy *a)
{
    size_t i;
    if (a->dtype != ATTN_NPY_F32)
        return 0;
    for (i = 0; i < a->count; i++) {
        uint32_t u;
        memcpy(&u, (const float *)a->data + i, sizeof u);
        if (u & 0xffffu)
            return 0;
    }
    return 1;
}

static int is_float(const attn_npy *a)
{
    return a->dtype == ATTN_NPY_F16 || a->dtype == ATTN_NPY_F32 || a->dtype == ATTN_NPY_F64;
}

static int same_shape(const attn_npy *a, const attn_npy *b)
{
    int d;
    if (a->ndim != b->ndim)
        return 0;
    for (d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* type: "f32", "bf16", "f16" or NULL (by A's dtype) */
static int cmd_compare(const char *pa, const char *pb, const char *type)
{
    attn_npy a, b;
    char err[256];
    double worst = 0.0, rtol;
    size_t i, worst_i = 0, bad = 0, first_bad = 0;
    int rc = 0;

    if (attn_npy_read(pa, &a, err, sizeof err) != 0) {
        fprintf(stderr, "npy_tool: %s: %s\n", pa, err);
        return 2;
    }
    if (attn_npy_read(pb, &b, err, sizeof err) != 0) {
        fprintf(stderr, "npy_tool: %s: %s\n", pb, err);
        attn_npy_free(&a);
        return 2;
    }
    if (!is_float(&a) || !is_float(&b)) {
        fprintf(stderr, "npy_tool: compare needs float16/float32/float64 arrays, got %s and %s\n",
                attn_npy_dtype_name(a.dtype), attn_npy_dtype_name(b.dtype));
        rc = 2;
    } else if (!same_shape(&a, &b)) {
        fprintf(stderr, "npy_tool: %s and %s differ in shape\n", pa, pb);
        rc = 2;
    }
    if (rc != 0) {
        attn_npy_free(&a);
        attn_npy_free(&b);
        return rc;
    }
    if (type == NULL)
        type = a.dtype == ATTN_NPY_F16 ? "f16" : all_bf16(&a) ? "bf16" : "f32";
    rtol = !strcmp(type, "bf16") ? ATTN_REF_TOL_REL_BF16
           : !strcmp(type, "f16") ? ATTN_REF_TOL_REL_F16 : ATTN_REF_TOL_REL_F32;

    for (i = 0; i < a.count; i++) {
        const double x = element(&a, i), ref = element(&b, i);
        double ratio;
        if (isnan(x) || isnan(ref))
            ratio = isnan(x) && isnan(ref) ? 0.0 : INFINITY;
        else if (isinf(x) || isinf(ref))
            ratio = x == ref ? 0.0 : INFINITY;
        else
            ratio = fabs(x - ref) / (ATOL + rtol * fabs(ref));
        if (ratio > 1.0 && bad++ == 0)
            first_bad = i;
        if (ratio > worst || i == 0) {
            worst = ratio;
            worst_i = i;
        }
    }
    printf("worst ratio %.4g at index %zu (1 = tolerance |a-ref| <= %g + %g |ref|)\n", worst,
           worst_i, ATOL, rtol);
    if (bad > 0)
        printf("%zu of %zu elements outside the tolerance; first at index %zu: %.9g vs ref "
               "%.9g\n",
               bad, a.count, first_bad, element(&a, first_bad), element(&b, first_bad));
    attn_npy_free(&a);
    attn_npy_free(&b);
    return bad > 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "random") == 0)
        return cmd_random(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "ints") == 0)
        return cmd_ints(argc, argv);
    if (argc >= 5 && strcmp(argv[1], "table") == 0)
        return cmd_table(argc, argv);
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "compare") == 0) {
        const char *type = argc == 5 ? argv[4] : NULL;
        if (type != NULL && strcmp(type, "f32") && strcmp(type, "bf16") && strcmp(type, "f16"))
            return usage();
        return cmd_compare(argv[2], argv[3], type);
    }
    return usage();
}
