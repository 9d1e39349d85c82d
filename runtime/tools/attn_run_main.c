/*
 * attn_run_main.c - the program behind `attngen run`.
 *
 * Compiled together with one generated kernel and a one-line file that
 * defines attn_entry_kernel.  Reads Q/K/V (and seqlens_k, mask) from .npy
 * files, checks every shape against the kernel's config, runs the kernel
 * (or, with --reference, the naive float64 reference of attn_reference.h)
 * and writes O (and LSE) atomically: each into a staging file next to it,
 * renamed into place once both are complete.  Any error: one line on
 * stderr, "attngen: <file>: <what is wrong>", exit code 2, no output
 * written and the files that were there before left as they were.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_npy.h"
#include "attn_reference.h"
#include "attn_runtime.h"

extern const attn_kernel *const attn_entry_kernel;

#define EXIT_BAD_INPUT 2

static const char usage[] =
    "usage: attn_run --q Q.npy --k K.npy --v V.npy [--seqlens-k S.npy] [--mask M.npy]\n"
    "                -o O.npy [--lse L.npy] [--threads N] [--isa NAME] [--reference]\n"
    "  --reference   compute O and LSE with the naive float64 reference (attn_reference)\n"
    "                instead of the kernel: slow, for checking; --isa and --threads are\n"
    "                then ignored\n";

#ifdef __GNUC__
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "attngen: %s: ", what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(EXIT_BAD_INPUT);
}

/* "(1, 7, 8, 64)", "(3,)", "()" like Python prints a shape */
static const char *shape_str(const attn_npy *a, char *buf, size_t len)
{
    size_t pos = 0;
    int d;
    pos += (size_t)snprintf(buf, len, "(");
    for (d = 0; d < a->ndim && pos < len; d++)
        pos += (size_t)snprintf(buf + pos, len - pos, d == 0 ? "%lld" : ", %lld",
                                (long long)a->shape[d]);
    if (pos < len)
        snprintf(buf + pos, len - pos, a->ndim == 1 ? ",)" : ")");
    return buf;
}

static void load(const char *path, attn_npy *a)
{
    char err[256];
    if (attn_npy_read(path, a, err, sizeof err) != 0)
        fail(path, "%s", err);
}

static float *load_f32(const char *path, const attn_npy *a)
{
    char err[256];
    float *data;
    if (attn_npy_to_f32(a, &data, err, sizeof err) != 0)
        fail(path, "%s", err);
    return data;
}

/* A 4-D [B][L][H][dim] tensor, or 3-D [L][H][dim] meaning B = 1. */
typedef struct {
    int ndim;
    int64_t batch, len;
} bshd;

static bshd check_bshd(const char *path, const attn_npy *a, const char *len_name,
                       const char *heads_name, int64_t heads, const char *dim_name,
                       int64_t dim)
{
    char shp[160];
    bshd t;
    int off;

    if (a->ndim != 3 && a->ndim != 4)
        fail(path,
             "expected a 4-D array [batch][%s][%s][%s] (or 3-D without batch), got shape %s",
             len_name, heads_name, dim_name, shape_str(a, shp, sizeof shp));
    off = a->ndim - 3;
    if (a->shape[off + 1] != heads || a->shape[off + 2] != dim)
        fail(path,
             "shape %s does not match the config: expected %s %lld and %s %lld in dims %d "
             "and %d",
             shape_str(a, shp, sizeof shp), heads_name, (long long)heads, dim_name,
             (long long)dim, off + 2, off + 3);
    t.ndim = a->ndim;
    t.batch = off ? a->shape[0] : 1;
    t.len = a->shape[off];
    return t;
}

/* An output path that exists must be a regular file: publishing the result
   renames over it, which would replace a FIFO or a device, or fail on a
   folder only after all the work. */
static void check_output_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        fail(path, "exists and is not a regular file; not replacing it");
}

/* Where a path points: the file's device and inode when it exists, else its
   folder's and its last component (an output not yet written), so that
   "o.npy" and "./o.npy" compare equal.  0 when neither can be found. */
typedef struct {
    dev_t dev;
    ino_t ino;
    const char *name; /* NULL: dev/ino are the file's own */
} file_id;

static int get_file_id(const char *path, char *dir, size_t dirlen, file_id *id)
{
    struct stat st;
    const char *slash = strrchr(path, '/');
    if (stat(path, &st) == 0) {
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        id->name = NULL;
        return 1;
    }
    if (slash == NULL) {
        snprintf(dir, dirlen, ".");
        id->name = path;
    } else {
        snprintf(dir, dirlen, "%.*s", (int)(slash - path) + (slash == path), path);
        id->name = slash + 1;
    }
    if (stat(dir, &st) != 0)
        return 0;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return 1;
}

/* Whether two paths name the same file (or the same file to be). */
static int same_file(const char *a, const char *b)
{
    char da[4096], db[4096];
    file_id ia, ib;
    if (!get_file_id(a, da, sizeof da, &ia) || !get_file_id(b, db, sizeof db, &ib))
        return strcmp(a, b) == 0;
    if ((ia.name == NULL) != (ib.name == NULL) || ia.dev != ib.dev || ia.ino != ib.ino)
        return 0;
    return ia.name == NULL || strcmp(ia.name, ib.name) == 0;
}

/* Writes an output to "<path>.tmp.<pid>", next to path; returns that name. */
static char *write_staged(const char *path, int ndim, const int64_t *shape, const float *data,
                          char *err, size_t errlen)
{
    const size_t len = strlen(path) + 32;
    char *staged = (char *)malloc(len);
    if (staged == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(staged, len, "%s.tmp.%ld", path, (long)getpid());
    if (attn_npy_write(staged, ATTN_NPY_F32, ndim, shape, data, err, errlen) != 0) {
        free(staged);
        return NULL;
    }
    return staged;
}

/* Parses a non-negative int option value. */
static int parse_threads(const char *s)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > INT_MAX)
        fail("--threads", "expected a non-negative integer, got '%s'", s);
    return (int)v;
}

/* The variant --isa names, if compiled in and runnable here. */
static const attn_variant *pick_isa(const attn_kernel *kernel, const char *name)
{
    char avail[128] = "";
    const int isa = attn_isa_from_name(name);
    int i;

    for (i = 0; i < kernel->n_variants; i++) {
        const attn_variant *v = &kernel->variants[i];
        if (!attn_isa_supported(v->isa))
            continue;
        if ((int)v->isa == isa)
            return v;
        if (avail[0] != '\0')
            strncat(avail, ", ", sizeof avail - strlen(avail) - 1);
        strncat(avail, attn_isa_name(v->isa), sizeof avail - strlen(avail) - 1);
    }
    if (isa < 0)
        fail("--isa", "unknown ISA '%s' (available for this kernel on this CPU: %s)", name,
             avail);
    fail("--isa", "'%s' is not compiled into this kernel or not supported by this CPU "
                  "(available: %s)",
         name, avail);
}

int main(int argc, char **argv)
{
    const attn_kernel *kernel = attn_entry_kernel;
    const attn_spec *spec = &kernel->spec;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL, *s_path = NULL;
    const char *m_path = NULL, *o_path = NULL, *lse_path = NULL, *isa_name = NULL;
    const attn_variant *variant = NULL;
    attn_npy qa, ka, va, sa, ma;
    bshd qt, kt, vt;
    attn_args args;
    float *q, *k, *v, *o, *lse, *bias = NULL;
    int32_t *seqlens = NULL;
    int64_t o_shape[4], lse_shape[3];
    size_t o_count, lse_count;
    char err[256], shp[160];
    attn_status st;
    int threads = 0, use_reference = 0, i;

    for (i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char **dest = NULL;
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(opt, "--reference") == 0) {
            use_reference = 1;
            continue;
        }
        if (strcmp(opt, "--q") == 0) dest = &q_path;
        else if (strcmp(opt, "--k") == 0) dest = &k_path;
        else if (strcmp(opt, "--v") == 0) dest = &v_path;
        else if (strcmp(opt, "--seqlens-k") == 0) dest = &s_path;
        else if (strcmp(opt, "--mask") == 0) dest = &m_path;
        else if (strcmp(opt, "-o") == 0) dest = &o_path;
        else if (strcmp(opt, "--lse") == 0) dest = &lse_path;
        else if (strcmp(opt, "--isa") == 0) dest = &isa_name;
        else if (strcmp(opt, "--threads") != 0)
            fail(opt, "unknown option (expected --q, --k, --v, --seqlens-k, --mask, -o, "
                      "--lse, --threads, --isa, --reference)");
        if (i + 1 >= argc)
            fail(opt, "needs a value");
        if (dest != NULL)
            *dest = argv[++i];
        else
            threads = parse_threads(argv[++i]);
    }
    if (q_path == NULL) fail("--q", "required (the query tensor)");
    if (k_path == NULL) fail("--k", "required (the key tensor)");
    if (v_path == NULL) fail("--v", "required (the value tensor)");
    if (o_path == NULL) fail("-o", "required (where to write the output)");
    if (lse_path != NULL && same_file(lse_path, o_path))
        fail("--lse", "must differ from -o");
    {
        /* an output must not replace an input */
        const char *in_opt[5] = { "--q", "--k", "--v", "--seqlens-k", "--mask" };
        const char *in_path[5] = { q_path, k_path, v_path, s_path, m_path };
        const char *out_opt[2] = { "-o", "--lse" };
        const char *out_path[2] = { o_path, lse_path };
        int a, b;
        for (a = 0; a < 2; a++)
            for (b = 0; b < 5; b++)
                if (out_path[a] != NULL && in_path[b] != NULL && same_file(out_path[a], in_path[b]))
                    fail(out_opt[a], "'%s' is the %s input; not replacing an input", out_path[a], in_opt[b]);
    }
    check_output_path(o_path);
    if (lse_path != NULL)
        check_output_path(lse_path);
    if (s_path != NULL && !spec->padding)
        fail(s_path, "the config '%s' has no padding, so --seqlens-k is not accepted",
             spec->name);
    if (s_path == NULL && spec->padding)
        fail("--seqlens-k", "required: the config '%s' has padding", spec->name);
    if (m_path != NULL && spec->mask == ATTN_MASK_NONE)
        fail(m_path, "the config '%s' has no mask, so --mask is not accepted", spec->name);
    if (m_path == NULL && spec->mask != ATTN_MASK_NONE)
        fail("--mask", "required: the config '%s' has mask \"%s\"", spec->name,
             spec->mask == ATTN_MASK_BOOL ? "bool" : "bias");
    if (isa_name != NULL && !use_reference)
        variant = pick_isa(kernel, isa_name);

    /* Q, K, V: shapes first, then the data as f32 */
    load(q_path, &qa);
    qt = check_bshd(q_path, &qa, "seq_q", "heads_q", spec->heads_q, "head_dim", spec->head_dim);
    load(k_path, &ka);
    kt = check_bshd(k_path, &ka, "seq_k", "heads_kv", spec->heads_kv, "head_dim",
                    spec->head_dim);
    if (kt.batch != qt.batch)
        fail(k_path, "batch %lld does not match %s's batch %lld", (long long)kt.batch, q_path,
             (long long)qt.batch);
    load(v_path, &va);
    vt = check_bshd(v_path, &va, "seq_k", "heads_kv", spec->heads_kv, "head_dim_v",
                    spec->head_dim_v);
    if (vt.batch != qt.batch)
        fail(v_path, "batch %lld does not match %s's batch %lld", (long long)vt.batch, q_path,
             (long long)qt.batch);
    if (vt.len != kt.len)
        fail(v_path, "seq_k %lld does not match %s's seq_k %lld", (long long)vt.len, k_path,
             (long long)kt.len);
    q = load_f32(q_path, &qa);
    k = load_f32(k_path, &ka);
    v = load_f32(v_path, &va);

    memset(&args, 0, sizeof args);
    args.batch = qt.batch;
    args.seq_q = qt.len;
    args.seq_k = kt.len;
    attn_args_set_contiguous(&args, spec);
    args.q = q;
    args.k = k;
    args.v = v;
    args.threads = threads;

    if (s_path != NULL) {
        load(s_path, &sa);
        if (sa.ndim != 1 || sa.shape[0] != args.batch)
            fail(s_path, "expected shape (%lld,) (one key length per batch), got %s",
                 (long long)args.batch, shape_str(&sa, shp, sizeof shp));
        if (attn_npy_to_i32(&sa, &seqlens, err, sizeof err) != 0)
            fail(s_path, "%s", err);
        for (i = 0; i < args.batch; i++)
            if (seqlens[i] < 0 || seqlens[i] > args.seq_k)
                fail(s_path, "seqlens_k[%d] = %ld is outside 0..%lld (seq_k)", i,
                     (long)seqlens[i], (long long)args.seq_k);
        args.seqlens_k = seqlens;
    }

    if (m_path != NULL) {
        const int64_t lq = args.seq_q, lk = args.seq_k;
        load(m_path, &ma);
        if (spec->mask == ATTN_MASK_BOOL && ma.dtype != ATTN_NPY_BOOL && ma.dtype != ATTN_NPY_U8)
            fail(m_path, "dtype %s does not match the config's mask \"bool\" (expected bool or "
                         "uint8)",
                 attn_npy_dtype_name(ma.dtype));
        if (spec->mask == ATTN_MASK_BIAS && ma.dtype != ATTN_NPY_F32 && ma.dtype != ATTN_NPY_F64)
            fail(m_path, "dtype %s does not match the config's mask \"bias\" (expected float32 "
                         "or float64)",
                 attn_npy_dtype_name(ma.dtype));
        if (ma.ndim == 2 && ma.shape[0] == lq && ma.shape[1] == lk) {
            args.mask_stride[0] = 0; /* one [Lq][Lk] matrix for every b and h */
            args.mask_stride[1] = 0;
        } else if (ma.ndim == 4 && (ma.shape[0] == args.batch || ma.shape[0] == 1) &&
                   (ma.shape[1] == spec->heads_q || ma.shape[1] == 1) && ma.shape[2] == lq &&
                   ma.shape[3] == lk) {
            args.mask_stride[1] = ma.shape[1] == 1 ? 0 : lq * lk;
            args.mask_stride[0] = ma.shape[0] == 1 ? 0 : ma.shape[1] * lq * lk;
        } else {
            fail(m_path, "shape %s does not match: expected [seq_q][seq_k] = (%lld, %lld) or "
                         "[batch|1][heads_q|1][seq_q][seq_k] = (%lld|1, %d|1, %lld, %lld)",
                 shape_str(&ma, shp, sizeof shp), (long long)lq, (long long)lk,
                 (long long)args.batch, spec->heads_q, (long long)lq, (long long)lk);
        }
        args.mask_stride[2] = lk;
        args.mask_stride[3] = 1;
        if (spec->mask == ATTN_MASK_BIAS) {
            bias = load_f32(m_path, &ma);
            args.mask = bias;
        } else {
            args.mask = ma.data; /* bytes, nonzero = keep */
        }
    }

    /* outputs: O [B][Lq][Hq][Dv] and LSE [B][Hq][Lq] (no B for 3-D input) */
    o_shape[0] = args.batch;
    o_shape[1] = args.seq_q;
    o_shape[2] = spec->heads_q;
    o_shape[3] = spec->head_dim_v;
    lse_shape[0] = args.batch;
    lse_shape[1] = spec->heads_q;
    lse_shape[2] = args.seq_q;
    o_count = (size_t)args.batch * (size_t)args.seq_q * (size_t)spec->heads_q;
    lse_count = o_count;
    if (o_count > SIZE_MAX / sizeof(float) / ((size_t)spec->head_dim_v + 1))
        fail(o_path, "the output is too large");
    o_count *= (size_t)spec->head_dim_v;
    o = (float *)malloc(o_count * sizeof *o + 1);
    lse = (float *)malloc(lse_count * sizeof *lse + 1);
    if (o == NULL || lse == NULL)
        fail(o_path, "out of memory");
    args.o = o;
    args.lse = lse;

    if (use_reference) {
        st = attn_reference(spec, &args);
    } else if (variant != NULL) {
        st = attn_check_args(spec, &args);
        if (st == ATTN_OK)
            st = variant->fwd(&args);
    } else {
        st = kernel->fwd(&args);
    }
    if (st != ATTN_OK)
        fail(spec->name, "%s", attn_status_string(st));

    {
        /* both outputs complete before either replaces what was there */
        const int drop_batch = qt.ndim == 3;
        char *o_staged, *lse_staged = NULL;
        o_staged = write_staged(o_path, 4 - drop_batch, o_shape + drop_batch, o, err, sizeof err);
        if (o_staged == NULL)
            fail(o_path, "%s", err);
        if (lse_path != NULL) {
            lse_staged = write_staged(lse_path, 3 - drop_batch, lse_shape + drop_batch, lse, err,
                                      sizeof err);
            if (lse_staged == NULL) {
                remove(o_staged);
                fail(lse_path, "%s", err);
            }
        }
        if (rename(o_staged, o_path) != 0) {
            const int e = errno;
            remove(o_staged);
            if (lse_staged != NULL)
                remove(lse_staged);
            fail(o_path, "cannot rename the finished file over it: %s", strerror(e));
        }
        if (lse_staged != NULL && rename(lse_staged, lse_path) != 0) {
            const int e = errno;
            remove(lse_staged);
            fail(lse_path, "cannot rename the finished file over it: %s", strerror(e));
        }
        free(o_staged);
        free(lse_staged);
    }
    attn_npy_free(&qa);
    attn_npy_free(&ka);
    attn_npy_free(&va);
    if (s_path != NULL)
        attn_npy_free(&sa);
    if (m_path != NULL)
        attn_npy_free(&ma);
    free(q);
    free(k);
    free(v);
    free(bias);
    free(seqlens);
    free(o);
    free(lse);
    return 0;
}
