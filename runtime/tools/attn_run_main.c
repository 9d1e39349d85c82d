/*
 * attn_run_main.c - the program behind `attngen run`.
 *
 * Compiled together with one generated kernel and runtime/tools/attn_entry.c,
 * which defines attn_entry_kernel.  Reads Q/K/V (and seqlens_k, mask) from .npy
 * files, checks every shape against the kernel's config, runs the kernel
 * (or, with --reference, the naive float64 reference of attn_reference.h)
 * and writes O (and LSE) atomically: each into a staging file next to it,
 * renamed into place once both are complete.  Any error: one line on
 * stderr, "attngen: <file>: <what is wrong>", exit code 2, no output
 * written and the files that were there before left as they were.
 *
 * Storage types: Q, K and V may be float16, float32 or float64 files,
 * whatever the kernel stores; each is converted to its tensor's storage
 * type in one rounding to nearest even, exactly as a C caller would have
 * stored the same values: f16 to f16 is a copy; to f32, f16 widens exactly
 * and f64 rounds as C converts it; f16 or f32 to bf16 or f16 is
 * attn_f32_to_bf16 / attn_f32_to_f16 of the (exact) f32 value.  f64 to
 * bf16 or f16 goes through f32 without a second rounding: the f64 value is
 * first cut to f32 rounding to odd (toward zero, the last bit set when
 * anything was cut), which keeps 13 or more bits past an f16 or bf16
 * significand, enough for rounding that to nearest even to give the
 * correctly rounded f64 value (Boldo and Melquiond's round-to-odd).
 * O is written as float32, or as float16 when the kernel stores O as f16
 * (a bf16 O is widened to float32, exactly: .npy has no bf16); LSE is
 * float32.  --reference computes on the stored inputs, widened exactly,
 * and writes its O unrounded, as float32.  --weights (configs with weights)
 * writes the attention weights P [B][Hq][Lq][Lk] as float32, or with
 * --average-heads their mean over the query heads, [B][Lq][Lk] (what
 * PyTorch's nn.MultiheadAttention returns by default), published with O.
 *
 * Linear configs (kind = "linear") write no LSE (--lse is an error).  With
 * state = true, --state-in S.npy Z.npy reads the state before the call
 * (S [B][Hkv][D][Dv], z [B][Hkv][D], float32 or float64; without it the
 * state is zero) and --state-out S.npy Z.npy writes the state after it,
 * float32, published with O.  --state-out may name the --state-in files:
 * the state is then updated in place (atomically, like every output).
 *
 * Additive and luong configs (attn_classic_args: one head, no scale) take
 * their inputs by name instead: --s S [B][Lq][Ds] and --h H [B][Lk][Dh]
 * (without the batch dim: B = 1), which give the shape, and the parameters
 * the score reads (--w-s, --w-h or --u, --w, --v-attn, --b), each checked
 * against the config and against S and H; a mismatch names both shapes.
 * S is stored in dtype_q, the rest in dtype_kv, converted as above.  C
 * [B][Lq][Dh] is written as O is, and --weights A [B][Lq][Lk] as float32.
 * The flags of one kind of config are errors for the other.
 *
 * Appending (sdpa): --k-new [B][Ln][Hkv][D] and --v-new [B][Ln][Hkv][Dv],
 * read in Q's storage type, are stored by the kernel at keys seqlens_k[b]..
 * of the cache --k / --v before it attends over seqlens_k[b] + Ln keys;
 * --reference stores them itself as the kernel does (reference_append).
 * --k-out / --v-out write the caches after the call, shaped as read (raw
 * blocks stay raw; otherwise f32, f16 as f16), published with O; they may
 * name --k / --v (the cache updated in place).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_cases.h" /* attn_rng */
#include "attn_npy.h"
#include "attn_reference.h"
#include "attn_runtime.h"

extern const attn_kernel *const attn_entry_kernel;

#define EXIT_BAD_INPUT 2

static const char usage[] =
    "usage: attn_run --q Q.npy --k K.npy --v V.npy [--seqlens-k S.npy] [--mask M.npy]\n"
    "                [--rel-table T.npy]\n"
    "                -o O.npy [--lse L.npy] [--weights W.npy [--average-heads]]\n"
    "                [--entropy E.npy]\n"
    "       attn_run --random-inputs SEED --seq-q N --seq-k M [--batch B]\n"
    "                [--q Q.npy --k K.npy --v V.npy] -o O.npy ...\n"
    "                [--threads N] [--isa NAME] [--reference]\n"
    "                [--dropout-p P --dropout-seed S --dropout-offset N]\n"
    "                [--state-in S.npy Z.npy] [--state-out S.npy Z.npy] [--sinks S.npy]\n"
    "                [--rope-cos C.npy --rope-sin S.npy]\n"
    "                [--q-norm-w W.npy [--k-norm-w W.npy]]\n"
    "                [--k-new KN.npy [--v-new VN.npy] [--k-out K2.npy] [--v-out V2.npy]]\n"
    "  Q, K, V: float16, float32 or float64, converted to the kernel's storage types\n"
    "  --reference   compute O and LSE with the naive float64 reference (attn_reference)\n"
    "                instead of the kernel, on the stored inputs: slow, for checking;\n"
    "                --isa and --threads are then ignored, and O is written as float32\n"
    "  --weights     also write the attention weights P [B][Hq][Lq][Lk], float32\n"
    "                (configs with weights = true); --average-heads: their mean over\n"
    "                the query heads, [B][Lq][Lk]\n"
    "  --random-inputs  Q, K and V drawn N(0, 1) (splitmix64, attn_rng_normal: Q, then\n"
    "                K, then V) instead of read; --q, --k, --v name where to write them\n"
    "                (float32, as drawn; the kernel gets them in its storage types)\n"
    "  --entropy     also write each row's attention entropy E [B][Hq][Lq], float32\n"
    "                (configs with entropy = true)\n"
    "  --dropout-p   configs with dropout = true: the probability of dropping a weight,\n"
    "                in [0, 1) (default 0); --dropout-seed (uint64) and\n"
    "                --dropout-offset (uint32) pick the mask (default 0)\n"
    "  --rel-table   configs with rel_bias: the learned table [rows][heads_q], float32\n"
    "                or float64 (rows: T5's buckets, or 2 max_distance + 1)\n"
    "  --state-in    linear configs with state = true: the state before the call,\n"
    "                S [B][Hkv][D][Dv] and z [B][Hkv][D] (default: zero);\n"
    "                --state-out: where to write the state after the call (float32)\n"
    "  --sinks       configs with sinks = true (required there): a logit per query\n"
    "                head [Hq], float32 or float64\n"
    "  --block-table paged configs (required there, but with --random-inputs): int32\n"
    "                [B][M], key j of batch b in slot j %% P of page BT[b][j / P]; K and\n"
    "                V are then pools [N][P][Hkv][D] (order NHD) or [N][Hkv][P][D] (HND)\n"
    "  --do dO.npy --dq dQ.npy --dk dK.npy --dv dV.npy [--dsinks dS.npy]\n"
    "                configs with backward = true: after the forward, the backward pass\n"
    "                with its O and LSE; dO shaped like O, the gradients of Q, K and V\n"
    "                written as float32 (bf16 widened) or float16 (grad_dtype); with\n"
    "                sinks = true, --dsinks: the sink logits' gradient [Hq], float32\n"
    "  --drel dT.npy with the four, configs with rel_bias: the relative position\n"
    "                table's gradient [rows][Hq] (rel_table's shape), float32\n"
    "  --dq-norm-w dW.npy  with the four, configs with qk_norm: the gradient of the\n"
    "                query norm's weights [D], float32\n"
    "  configs with shared_kv = true take no --v: V is the first head_dim_v values\n"
    "                of each K row\n"
    "  --rope-cos, --rope-sin  configs with rope table = true (required there): cos\n"
    "                and sin of each rotated pair's angle at positions 0..T-1,\n"
    "                [T][rope dim / 2], float32 or float64\n"
    "  --q-norm-w, --k-norm-w  configs with qk_norm (--q-norm-w required there,\n"
    "                --k-norm-w with --k-new): the RMS norm's weights of query rows\n"
    "                and of new key rows, [D], float32 or float64\n"
    "  --k-new, --v-new  new rows [B][Ln][Hkv][D | Dv] stored at keys seqlens_k[b]..\n"
    "                of the cache --k, --v; --k-out, --v-out: the caches after the call\n"
    "additive and luong configs (one head, no scale):\n"
    "       attn_run --s S.npy --h H.npy [--w-s W.npy] [--w-h W.npy | --u U.npy] [--w W.npy]\n"
    "                [--v-attn V.npy] [--b B.npy] [--seqlens-k S.npy] [--mask M.npy]\n"
    "                -o C.npy [--weights A.npy] [--threads N] [--isa NAME] [--reference]\n"
    "  S [B][Lq][Ds], H [B][Lk][Dh] (without the batch dim: B = 1); additive: --w-s\n"
    "  W_s [Da][Ds], --w-h W_h [Da][Dh] or --u U = H W_h^T [B][Lk][Da], --v-attn v [Da];\n"
    "  luong general: --w W [Dh][Ds]; concat: --w W [Da][Dh + Ds], --v-attn v [Da];\n"
    "  --b b [Da] with bias; C [B][Lq][Dh], --weights A [B][Lq][Lk] float32\n";

/* The inputs of the additive and luong families, by option (run_options.cl). */
enum { CL_S, CL_H, CL_U, CL_W_S, CL_W_H, CL_W, CL_V, CL_B, CL_COUNT };
static const char *const classic_opt[CL_COUNT] = { "--s", "--h", "--u", "--w-s", "--w-h", "--w", "--v-attn", "--b" };

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

static void load(const char *path, attn_npy *a)
{
    char err[256];
    if (attn_npy_read(path, a, err, sizeof err) != 0)
        fail(path, "%s", err);
}

/* The same, with label ("--w-s W.npy") starting the message. */
static void load_label(const char *label, const char *path, attn_npy *a)
{
    char err[256];
    if (attn_npy_read(path, a, err, sizeof err) != 0)
        fail(label, "%s", err);
}

static float *load_f32(const char *path, const attn_npy *a)
{
    char err[256];
    float *data;
    if (attn_npy_to_f32(a, &data, err, sizeof err) != 0)
        fail(path, "%s", err);
    return data;
}

/* An f32 value stored as each storage type (one rounding to nearest even). */
static void store_bf16(float x, void *base, size_t i) { ((uint16_t *)base)[i] = attn_f32_to_bf16(x); }
static void store_f16(float x, void *base, size_t i) { ((uint16_t *)base)[i] = attn_f32_to_f16(x); }
static void store_f32(float x, void *base, size_t i) { ((float *)base)[i] = x; }

/* A float16, float32 or float64 array converted to storage type dtype, as
   a caller of the C API would have stored its values (top of this file;
   attn_npy_to_stored).  malloc'ed (at least 1 byte); free() it. */
static void *load_stored(const char *path, const attn_npy *a, attn_dtype dtype)
{
    attn_npy_storage to;
    char err[256];
    void *out;
    to.size = attn_dtype_size(dtype);
    to.narrow = dtype != ATTN_DTYPE_F32;
    to.is_f16 = dtype == ATTN_DTYPE_F16;
    to.store = dtype == ATTN_DTYPE_BF16 ? store_bf16 : dtype == ATTN_DTYPE_F16 ? store_f16 : store_f32;
    to.from_f16 = attn_f16_to_f32;
    if (attn_npy_to_stored(a, &to, &out, err, sizeof err) != 0)
        fail(path, "%s", err);
    return out;
}

/* n stored values of dtype widened to f32 (exact; a block type's n / 32
   blocks dequantized); malloc'ed. */
static float *widen_copy(const char *path, attn_dtype dtype, const void *src, size_t n)
{
    float *out;
    size_t i;
    if (n > (SIZE_MAX - 1) / sizeof(float))
        fail(path, "the array is too large");
    out = (float *)malloc(n * sizeof(float) + 1);
    if (out == NULL)
        fail(path, "out of memory");
    if (attn_dtype_values(dtype) > 1) {
        attn_dtype_to_f32_array(dtype, src, out, n);
        return out;
    }
    for (i = 0; i < n; i++)
        out[i] = dtype == ATTN_DTYPE_BF16  ? attn_bf16_to_f32(((const uint16_t *)src)[i])
                 : dtype == ATTN_DTYPE_F16 ? attn_f16_to_f32(((const uint16_t *)src)[i])
                                           : ((const float *)src)[i];
    return out;
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
             len_name, heads_name, dim_name, attn_npy_shape_string(a, shp, sizeof shp));
    off = a->ndim - 3;
    if (a->shape[off + 1] != heads || a->shape[off + 2] != dim)
        fail(path,
             "shape %s does not match the config: expected %s %lld and %s %lld in dims %d "
             "and %d",
             attn_npy_shape_string(a, shp, sizeof shp), heads_name, (long long)heads, dim_name,
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

/* The command line. */
typedef struct {
    const char *q_path, *k_path, *v_path, *s_path, *m_path, *o_path, *lse_path, *isa_name;
    const char *r_path; /* --rel-table */
    const char *p_path; /* --weights */
    const char *sinks_path; /* --sinks */
    const char *e_path; /* --entropy */
    const char *rope_path[2]; /* --rope-cos, --rope-sin */
    int random;         /* --random-inputs: Q, K, V drawn, not read (--q, --k, --v: written) */
    uint64_t seed;
    int64_t batch, seq_q, seq_k; /* --batch, --seq-q, --seq-k (with --random-inputs) */
    const char *s_in[2], *s_out[2]; /* --state-in, --state-out: S and z */
    const char *cl[CL_COUNT]; /* additive and luong configs: the inputs by name (CL_*) */
    int threads, use_reference, average_heads;
    const char *dropout_opt;   /* the first --dropout-* option given, or NULL */
    float dropout_p;
    uint64_t dropout_seed;
    uint32_t dropout_offset;
    const char *bt_path; /* --block-table (paged configs) */
    const char *do_path, *grad_path[3]; /* --do; --dq, --dk, --dv (the backward pass) */
    const char *kn_path, *vn_path, *kv_out[2]; /* --k-new, --v-new; --k-out, --v-out (appending) */
    const char *qn_path[2]; /* --q-norm-w, --k-norm-w (configs with qk_norm) */
    const char *dsinks_path; /* --dsinks (the backward pass of a config with sinks) */
    const char *drel_path; /* --drel (the backward pass of a config with rel_bias) */
    const char *dnorm_path; /* --dq-norm-w (the backward pass of a config with qk_norm) */
} run_options;

/* --dropout-p: a number in [0, 1). */
static float parse_dropout_p(const char *s)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0 && v < 1.0) || !((float)v < 1.0f))
        fail("--dropout-p", "expected a number in [0, 1), got '%s'", s);
    return (float)v;
}

/* --dropout-seed, --dropout-offset: a non-negative integer up to max. */
static uint64_t parse_uint(const char *opt, const char *s, uint64_t max)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || (uint64_t)v > max)
        fail(opt, "expected an integer in 0..%llu, got '%s'", (unsigned long long)max, s);
    return (uint64_t)v;
}

/* The inputs as read, their shapes, and the arrays the kernel gets. */
typedef struct {
    attn_npy qa, ka, va, sa, ma, sinks_a;
    float *sinks;            /* --sinks: [Hq] */
    bshd qt, kt, vt;
    void *q, *k, *v;         /* in the kernel's storage types */
    float *qw, *kw, *vw;     /* --reference: the stored values widened */
    float *bias;             /* the mask as f32 (mask "bias") */
    attn_npy ra;             /* --rel-table as read */
    float *rel;              /* the relative position table as f32 */
    int32_t *seqlens;
    attn_npy state_a[2];     /* --state-in: S and z as read */
    attn_npy bta;            /* --block-table as read */
    int32_t *table;          /* the block table (paged configs) */
    int64_t pages;           /* paged configs: the pools' pages */
    int pooled;              /* K and V read as pools (paged configs without --random-inputs) */
    attn_npy rope_a[2];      /* --rope-cos, --rope-sin as read */
    float *rope[2];          /* and as f32 */
    attn_npy kna, vna;       /* --k-new, --v-new as read */
    void *kn, *vn;           /* the new rows in Q's storage type */
    int32_t *after;          /* --reference with --k-new: the lengths after the call */
    attn_npy qn_a[2];        /* --q-norm-w, --k-norm-w as read */
    float *qn[2];            /* and as f32 */
} run_inputs;

/* One output of the call: its entry in the family's tensors, the path it
   is written to (NULL: the kernel writes it, run does not keep it), its
   shape and data as held (in O's storage type, f32 with --reference, or
   f32), and how the file stores it. */
typedef struct {
    const attn_case_tensor *t;
    const char *path;
    int ndim, batched;       /* batched: shape[0] is the batch, left out after a 3-D input */
    int64_t shape[4];
    void *data;
    int borrowed;            /* data is an input's (the state, the caches): not freed here */
    attn_dtype dtype;
    attn_npy_dtype npy;
    size_t count;
    float *wide;             /* a bf16 output widened for the file */
} run_output;

#define RUN_MAX_OUTPUTS 16

/* The outputs, written by the kernel and then published in order. */
typedef struct {
    run_output slot[RUN_MAX_OUTPUTS];
    int n;
    float *state[2];         /* linear configs with state: S and z, in and out */
    int64_t state_shape[2][4];
    float *kv_wide[2];       /* --k-out, --v-out: a bf16 or block-type cache widened for the file */
} run_outputs;

/* Where each option that names a file keeps it (a pair's second file, z of
   --state-in and --state-out, next to its first). */
#define RUN_OPT(name, field) { name, offsetof(run_options, field) }
#define RUN_OPT_AT(name, field, i) { name, offsetof(run_options, field) + (i) * sizeof(const char *) }
static const struct {
    const char *opt;
    size_t off;
} option_paths[] = {
    RUN_OPT("--q", q_path), RUN_OPT("--k", k_path), RUN_OPT("--v", v_path), RUN_OPT("--seqlens-k", s_path),
    RUN_OPT("--mask", m_path), RUN_OPT("--rel-table", r_path), RUN_OPT("-o", o_path), RUN_OPT("--lse", lse_path),
    RUN_OPT("--weights", p_path), RUN_OPT("--sinks", sinks_path), RUN_OPT("--entropy", e_path),
    RUN_OPT("--block-table", bt_path), RUN_OPT_AT("--rope-cos", rope_path, 0), RUN_OPT_AT("--rope-sin", rope_path, 1),
    RUN_OPT("--isa", isa_name), RUN_OPT("--do", do_path), RUN_OPT_AT("--dq", grad_path, 0),
    RUN_OPT_AT("--dk", grad_path, 1), RUN_OPT_AT("--dv", grad_path, 2), RUN_OPT("--k-new", kn_path),
    RUN_OPT("--v-new", vn_path), RUN_OPT_AT("--k-out", kv_out, 0), RUN_OPT_AT("--v-out", kv_out, 1),
    RUN_OPT_AT("--q-norm-w", qn_path, 0), RUN_OPT_AT("--k-norm-w", qn_path, 1), RUN_OPT("--dsinks", dsinks_path),
    RUN_OPT("--drel", drel_path), RUN_OPT("--dq-norm-w", dnorm_path), RUN_OPT_AT("--s", cl, CL_S),
    RUN_OPT_AT("--h", cl, CL_H), RUN_OPT_AT("--u", cl, CL_U), RUN_OPT_AT("--w-s", cl, CL_W_S),
    RUN_OPT_AT("--w-h", cl, CL_W_H), RUN_OPT_AT("--w", cl, CL_W), RUN_OPT_AT("--v-attn", cl, CL_V),
    RUN_OPT_AT("--b", cl, CL_B), RUN_OPT_AT("--state-in", s_in, 0), RUN_OPT_AT("--state-out", s_out, 0),
};

/* Where option arg keeps its value; NULL: not one of option_paths. */
static const char **option_dest(const run_options *opt, const char *arg)
{
    size_t i;
    for (i = 0; i < sizeof option_paths / sizeof option_paths[0]; i++)
        if (strcmp(arg, option_paths[i].opt) == 0)
            return (const char **)(uintptr_t)((const char *)opt + option_paths[i].off);
    return NULL;
}

/* The file the options name for a tensor of the family's table (z: the
   second file of its option), or NULL. */
static const char *tensor_path(const run_options *opt, const attn_case_tensor *t)
{
    const char **dest = option_dest(opt, t->opt);
    return dest == NULL ? NULL : dest[strcmp(t->name, "z") == 0];
}

/* The family's tensor for an option (attn_case_tensor_find). */
static const attn_case_tensor *tensor_of(const attn_spec *spec, attn_direction dir, const char *opt_name)
{
    const attn_case_ops *ops = attn_case_ops_for(spec, dir);
    const attn_case_tensor *t = ops != NULL ? attn_case_tensor_find(ops->tensors, opt_name, spec) : NULL;
    if (t == NULL)
        fail(spec->name, "the config's kind has no %s", opt_name);
    return t;
}

/* A 1-D input of the family's tensors (its dim for the call's batch), read
   into *a and returned as its storage type, f32 or int32 (malloc'ed). */
static void *load_vector(const char *path, const attn_spec *spec, const char *opt_name, int64_t batch, attn_npy *a)
{
    const attn_case_tensor *t = tensor_of(spec, ATTN_DIR_FWD, opt_name);
    const int64_t n = attn_dim_value(t->dims[0], spec, batch, 0, 0);
    char err[256], shp[160];
    int32_t *ints = NULL;
    float *floats = NULL;
    int st;
    load(path, a);
    if (a->ndim != 1 || a->shape[0] != n)
        fail(path, "expected shape (%lld,) (%s), got %s", (long long)n, t->name,
             attn_npy_shape_string(a, shp, sizeof shp));
    st = t->store == ATTN_STORE_I32 ? attn_npy_to_i32(a, &ints, err, sizeof err)
                                    : attn_npy_to_f32(a, &floats, err, sizeof err);
    if (st != 0)
        fail(path, "%s", err);
    return ints != NULL ? (void *)ints : (void *)floats;
}

/* Parses argv into opt; --help prints the usage and exits 0. */
static void parse_options(int argc, char **argv, run_options *opt)
{
    int i;
    memset(opt, 0, sizeof *opt);
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char **dest = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        if (strcmp(arg, "--reference") == 0) {
            opt->use_reference = 1;
            continue;
        }
        if (strcmp(arg, "--average-heads") == 0) {
            opt->average_heads = 1;
            continue;
        }
        if (strcmp(arg, "--dropout-p") == 0 || strcmp(arg, "--dropout-seed") == 0 ||
            strcmp(arg, "--dropout-offset") == 0) {
            if (i + 1 >= argc)
                fail(arg, "needs a value");
            if (opt->dropout_opt == NULL)
                opt->dropout_opt = arg;
            if (strcmp(arg, "--dropout-p") == 0)
                opt->dropout_p = parse_dropout_p(argv[++i]);
            else if (strcmp(arg, "--dropout-seed") == 0)
                opt->dropout_seed = parse_uint(arg, argv[++i], UINT64_MAX);
            else
                opt->dropout_offset = (uint32_t)parse_uint(arg, argv[++i], UINT32_MAX);
            continue;
        }
        if (strcmp(arg, "--random-inputs") == 0 || strcmp(arg, "--batch") == 0 || strcmp(arg, "--seq-q") == 0 ||
            strcmp(arg, "--seq-k") == 0) {
            if (i + 1 >= argc)
                fail(arg, "needs a value");
            if (strcmp(arg, "--random-inputs") == 0) {
                opt->random = 1;
                opt->seed = parse_uint(arg, argv[++i], UINT64_MAX);
            } else {
                int64_t *to = strcmp(arg, "--batch") == 0 ? &opt->batch
                              : strcmp(arg, "--seq-q") == 0 ? &opt->seq_q : &opt->seq_k;
                *to = (int64_t)parse_uint(arg, argv[++i], (uint64_t)1 << 24);
            }
            continue;
        }
        if (strcmp(arg, "--state-in") == 0 || strcmp(arg, "--state-out") == 0) {
            const char **pair = strcmp(arg, "--state-in") == 0 ? opt->s_in : opt->s_out;
            if (i + 2 >= argc)
                fail(arg, "needs two values: the S and z files");
            pair[0] = argv[++i];
            pair[1] = argv[++i];
            continue;
        }
        if (strcmp(arg, "--threads") != 0 && (dest = option_dest(opt, arg)) == NULL)
            fail(arg, "unknown option (expected --q, --k, --v, --seqlens-k, --mask, --rel-table, -o, "
                      "--lse, --weights, --average-heads, --entropy, --random-inputs, --batch, --seq-q, "
                      "--seq-k, --threads, --isa, --reference, --block-table, "
                      "--dropout-p, --dropout-seed, --dropout-offset, --state-in, --state-out, --sinks, "
                      "--rope-cos, --rope-sin, --s, --h, --u, --w-s, --w-h, --w, --v-attn, --b, --do, --dq, --dk, "
                      "--dv, --dsinks, --drel, --dq-norm-w, --k-new, --v-new, --k-out, --v-out, --q-norm-w, --k-norm-w)");
        if (i + 1 >= argc)
            fail(arg, "needs a value");
        if (dest != NULL)
            *dest = argv[++i];
        else
            opt->threads = parse_threads(argv[++i]);
    }
}

/* The options against the family's tensors: a tensor the config does not
   take is refused, one it requires must be given (but for what
   --random-inputs draws), each output given must be a file that run may
   replace.  Tensors whose condition has no words (why "") are the family's
   own checks' (the classic inputs, appending, --lse, the state). */
static void check_taken(const run_options *opt, const attn_spec *spec, const attn_case_tensor *table)
{
    const attn_case_tensor *t;
    char why[160];
    for (t = table; t->opt != NULL; t++) {
        const char *path = tensor_path(opt, t);
        const attn_takes takes = attn_case_tensor_takes(t, spec, why, sizeof why);
        const int drawn = opt->random && strcmp(t->opt, "--block-table") == 0;
        if (t->takes != NULL && why[0] != '\0') {
            if (path != NULL && takes == ATTN_TAKES_NOT && attn_case_tensor_find(table, t->opt, spec) == t)
                fail(t->by_option ? t->opt : path, "the config '%s' %s, so %s is not accepted", spec->name, why,
                     t->opt);
            if (path == NULL && takes == ATTN_TAKES_REQUIRED && !drawn)
                fail(t->opt, "required: the config '%s' %s", spec->name, why);
        }
        if (t->output && path != NULL)
            check_output_path(path);
    }
}

/* No output of the family's tensors may name an input's file, but the
   input it updates in place (its replaces: S over S, z over z, a cache over
   itself). */
static void check_replaces(const run_options *opt, const attn_case_tensor *table)
{
    const attn_case_tensor *o, *i;
    for (o = table; o->opt != NULL; o++) {
        const char *out = o->output ? tensor_path(opt, o) : NULL;
        if (out == NULL)
            continue;
        for (i = table; i->opt != NULL; i++) {
            const char *in = i->output ? NULL : tensor_path(opt, i);
            if (in == NULL || (o->replaces != NULL && strcmp(o->replaces, i->opt) == 0 &&
                               (strcmp(o->name, "z") == 0) == (strcmp(i->name, "z") == 0)))
                continue;
            if (i > table && strcmp(i[-1].opt, i->opt) == 0 && strcmp(i->name, "z") != 0)
                continue; /* one option, several conditions: its file once */
            if (same_file(out, in))
                fail(o->opt, "'%s' is the %s input; not replacing an input", out, i->opt);
        }
    }
}

/* ---- qk_norm (--q-norm-w, --k-norm-w) ------------------------------------ */

/* --q-norm-w and --k-norm-w: only for a config with qk_norm; --q-norm-w
   required there, --k-norm-w with --k-new (the new key rows are normed);
   neither replaced by -o. */
static void check_qk_norm_paths(const run_options *opt, const attn_spec *spec)
{
    static const char *const names[2] = { "--q-norm-w", "--k-norm-w" };
    const int norm = spec->family == ATTN_FAMILY_SDPA && spec->qk_norm;
    int a;
    for (a = 0; a < 2; a++) {
        if (opt->qn_path[a] != NULL && !norm)
            fail(names[a], "the config '%s' has no qk_norm, so %s is not accepted", spec->name, names[a]);
    }
    if (norm && opt->qn_path[0] == NULL)
        fail("--q-norm-w", "required: the config '%s' has qk_norm (the weights of the query rows' norm)", spec->name);
    if (norm && opt->kn_path != NULL && opt->qn_path[1] == NULL)
        fail("--k-norm-w", "required with --k-new: the config '%s' has qk_norm (the new key rows are normed)",
             spec->name);
}

/* --q-norm-w, --k-norm-w: shape (D,) each, read as f32. */
static void load_qk_norm(const run_options *opt, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    int a;
    for (a = 0; a < 2; a++)
        if (opt->qn_path[a] != NULL)
            in->qn[a] = (float *)load_vector(opt->qn_path[a], spec, a ? "--k-norm-w" : "--q-norm-w", 0, &in->qn_a[a]);
    args->q_norm_w = in->qn[0];
    args->k_norm_w = in->qn[1];
}

static void free_qk_norm(const run_options *opt, run_inputs *in)
{
    int a;
    for (a = 0; a < 2; a++) {
        free(in->qn[a]);
        if (opt->qn_path[a] != NULL)
            attn_npy_free(&in->qn_a[a]);
    }
}

/* Row x of a new key (D values) normed as the reference norms a query row
   (qk_norm): in double, rounded to f32. */
static void qk_norm_new_row(const attn_spec *spec, const attn_args *args, float *x)
{
    double row[1024];
    int d;
    if (!spec->qk_norm || spec->head_dim > 1024)
        return;
    for (d = 0; d < spec->head_dim; d++)
        row[d] = x[d];
    attn_reference_qk_norm(spec, args->k_norm_w, row);
    for (d = 0; d < spec->head_dim; d++)
        x[d] = (float)row[d];
}

/* The paths the options name, against each other and the config: required
   ones given, outputs that replace no input, inputs the config takes. */
static void check_paths(const run_options *opt, const attn_spec *spec)
{
    enum { N_OUT = 6 };
    const char *out_opt[N_OUT] = { "-o", "--lse", "--weights", "--entropy", "--state-out", "--state-out" };
    const char *out_path[N_OUT];
    const int linear = spec->family == ATTN_FAMILY_LINEAR;
    const int shared = !linear && spec->shared_kv; /* V is read from K's rows: no --v */
    int a, b;

    for (a = 0; a < CL_COUNT; a++)
        if (opt->cl[a] != NULL)
            fail(classic_opt[a], "the config '%s' has kind = \"%s\", which takes --q, --k and --v; %s is "
                                 "for additive and luong configs",
                 spec->name, attn_family_name(spec->family), classic_opt[a]);
    if (!opt->random) {
        if (opt->q_path == NULL) fail("--q", "required (the query tensor, or --random-inputs)");
        if (opt->k_path == NULL) fail("--k", "required (the key tensor, or --random-inputs)");
        if (opt->v_path == NULL && !shared) fail("--v", "required (the value tensor, or --random-inputs)");
        if (opt->seq_q != 0 || opt->seq_k != 0 || opt->batch != 0)
            fail(opt->seq_q != 0 ? "--seq-q" : opt->seq_k != 0 ? "--seq-k" : "--batch",
                 "only with --random-inputs (the shapes come from the files)");
    } else {
        if (opt->seq_q < 1) fail("--seq-q", "required with --random-inputs: the query rows, 1..2^24");
        if (opt->seq_k < 1) fail("--seq-k", "required with --random-inputs: the keys, 1..2^24");
        if (opt->q_path != NULL && ((opt->k_path != NULL && same_file(opt->q_path, opt->k_path)) ||
                                    (opt->v_path != NULL && same_file(opt->q_path, opt->v_path))))
            fail("--q", "must differ from --k and --v");
        if (opt->k_path != NULL && opt->v_path != NULL && same_file(opt->k_path, opt->v_path))
            fail("--k", "must differ from --v");
    }
    if (opt->v_path != NULL && shared)
        fail(opt->v_path, "the config '%s' has shared_kv (V is the first head_dim_v values of each K row), so "
                          "--v is not accepted", spec->name);
    if (opt->o_path == NULL) fail("-o", "required (where to write the output)");
    if (opt->lse_path != NULL && linear)
        fail("--lse", "the config '%s' is linear attention, which has no LSE", spec->name);
    if (opt->lse_path != NULL && same_file(opt->lse_path, opt->o_path))
        fail("--lse", "must differ from -o");
    if ((opt->s_in[0] != NULL || opt->s_out[0] != NULL) && !(linear && spec->state))
        fail(opt->s_in[0] != NULL ? "--state-in" : "--state-out",
             "the config '%s' has no state (kind = \"linear\" with state = true), so it is not accepted",
             spec->name);
    if (opt->dropout_opt != NULL && !spec->dropout)
        fail(opt->dropout_opt, "the config '%s' has no dropout (dropout = true), so %s is not accepted",
             spec->name, opt->dropout_opt);
    if (opt->average_heads && opt->p_path == NULL)
        fail("--average-heads", "needs --weights (it averages the weights written there)");
    if (opt->p_path != NULL && (same_file(opt->p_path, opt->o_path) ||
                                (opt->lse_path != NULL && same_file(opt->p_path, opt->lse_path))))
        fail("--weights", "must differ from -o and --lse");
    out_path[0] = opt->o_path;
    out_path[1] = opt->lse_path;
    out_path[2] = opt->p_path;
    out_path[3] = opt->e_path;
    out_path[4] = opt->s_out[0];
    out_path[5] = opt->s_out[1];
    if (opt->s_in[0] != NULL && same_file(opt->s_in[0], opt->s_in[1]))
        fail("--state-in", "the S and z files must differ");
    for (a = 0; a < 6; a++)
        for (b = a + 1; b < 6; b++)
            if (a >= 4 && out_path[a] != NULL && out_path[b] != NULL && same_file(out_path[a], out_path[b]))
                fail(out_opt[a], "the S and z files must differ");
            else if (a < 4 && (b >= 4 || b == 3) && out_path[a] != NULL && out_path[b] != NULL &&
                     same_file(out_path[a], out_path[b]))
                fail(out_opt[b], "must differ from %s", out_opt[a]);
    check_replaces(opt, attn_case_ops_for(spec, ATTN_DIR_FWD)->tensors);
    check_taken(opt, spec, attn_case_ops_for(spec, ATTN_DIR_FWD)->tensors);
    if (opt->bt_path != NULL && opt->random)
        fail("--block-table", "not with --random-inputs, which draws K and V in the contiguous layout (read "
                              "through a table of their rows)");
    check_qk_norm_paths(opt, spec);
}

/* One drawn tensor [B][L][H][D] of n elements: N(0, 1) from r, written as
   float32 to path (unless NULL), returned in storage type dtype (malloc'ed). */
static void *random_tensor(const char *opt_name, const char *path, attn_rng *r, const int64_t *shape,
                           attn_dtype dtype)
{
    const size_t n = (size_t)(shape[0] * shape[1]) * (size_t)(shape[2] * shape[3]);
    float *x = (float *)malloc(n * sizeof(float) + 1);
    void *out = malloc(n / (size_t)attn_dtype_values(dtype) * attn_dtype_size(dtype) + 1);
    char err[256];
    size_t i;
    if (x == NULL || out == NULL)
        fail(opt_name, "out of memory");
    for (i = 0; i < n; i++)
        x[i] = attn_rng_normal(r);
    if (path != NULL && attn_npy_write(path, ATTN_NPY_F32, 4, shape, x, err, sizeof err) != 0)
        fail(path, "%s", err);
    if (attn_dtype_values(dtype) > 1) /* q8_0, q4_0: quantized as a cache stores them (n: whole blocks) */
        attn_f32_to_dtype_array(dtype, x, out, n);
    else
        for (i = 0; i < n; i++)
            (dtype == ATTN_DTYPE_BF16 ? store_bf16 : dtype == ATTN_DTYPE_F16 ? store_f16 : store_f32)(x[i], out, i);
    free(x);
    return out;
}

/* --random-inputs: Q [B][Lq][Hq][D], then K and V [B][Lk][Hkv][D | Dv], drawn
   from one stream seeded by SEED. */
static void random_qkv(const run_options *opt, const attn_spec *spec, run_inputs *in)
{
    const int64_t B = opt->batch > 0 ? opt->batch : 1;
    int64_t qs[4], ks[4], vs[4];
    attn_rng r;
    if ((uint64_t)B * (uint64_t)(opt->seq_q > opt->seq_k ? opt->seq_q : opt->seq_k) *
            (uint64_t)(spec->heads_q > spec->heads_kv ? spec->heads_q : spec->heads_kv) *
            (uint64_t)(spec->head_dim > spec->head_dim_v ? spec->head_dim : spec->head_dim_v) > ((uint64_t)1 << 30))
        fail("--random-inputs", "the inputs would pass 2^30 elements");
    qs[0] = ks[0] = vs[0] = B;
    qs[1] = opt->seq_q;
    ks[1] = vs[1] = opt->seq_k;
    qs[2] = spec->heads_q;
    ks[2] = vs[2] = spec->heads_kv;
    qs[3] = ks[3] = spec->head_dim;
    vs[3] = spec->head_dim_v;
    attn_rng_init(&r, opt->seed);
    in->q = random_tensor("--q", opt->q_path, &r, qs, spec->dtype_q);
    in->k = random_tensor("--k", opt->k_path, &r, ks, spec->dtype_kv);
    if (!spec->shared_kv) /* shared_kv: V is K's rows, nothing drawn */
        in->v = random_tensor("--v", opt->v_path, &r, vs, spec->dtype_kv);
    in->qt.ndim = in->kt.ndim = in->vt.ndim = 4;
    in->qt.batch = in->kt.batch = in->vt.batch = B;
    in->qt.len = opt->seq_q;
    in->kt.len = in->vt.len = opt->seq_k;
}

static void fill_qkv_args(const run_options *opt, const attn_spec *spec, const run_inputs *in, attn_args *args);

/* K or V: [B][Lk][Hkv][dim] (or 3-D), and for K/V in a block type (q8_0,
   q4_0) also raw blocks: uint8 [B][Lk][Hkv][dim / 32 * block bytes], ggml's
   bytes as they lie in its cache. */
static bshd check_kv(const char *path, const attn_npy *a, const attn_spec *spec, const char *dim_name,
                     int64_t dim)
{
    const int values = attn_dtype_values(spec->dtype_kv);
    if (values > 1 && a->dtype == ATTN_NPY_U8) {
        char name[64];
        snprintf(name, sizeof name, "%s / 32 * %u (%s blocks' bytes)", dim_name,
                 (unsigned)attn_dtype_size(spec->dtype_kv), attn_dtype_name(spec->dtype_kv));
        return check_bshd(path, a, "seq_k", "heads_kv", spec->heads_kv, name,
                          dim / values * (int64_t)attn_dtype_size(spec->dtype_kv));
    }
    return check_bshd(path, a, "seq_k", "heads_kv", spec->heads_kv, dim_name, dim);
}

/* K or V in the kernel's storage type: a block type's raw blocks copied, or
   float values quantized with the runtime's quantizers (as a cache that
   appends them stores them); other types as load_stored.  malloc'ed. */
static void *load_kv(const char *path, const attn_npy *a, attn_dtype dtype)
{
    void *out;
    float *f;
    if (attn_dtype_values(dtype) == 1)
        return load_stored(path, a, dtype);
    if (a->dtype == ATTN_NPY_U8) {
        out = malloc(a->count + 1);
        if (out == NULL)
            fail(path, "out of memory");
        memcpy(out, a->data, a->count);
        return out;
    }
    f = (float *)load_stored(path, a, ATTN_DTYPE_F32);
    out = malloc(a->count / ATTN_QK * attn_dtype_size(dtype) + 1);
    if (out == NULL)
        fail(path, "out of memory");
    attn_f32_to_dtype_array(dtype, f, out, a->count); /* count: a multiple of 32 (dim is) */
    free(f);
    return out;
}

/* A paged config's K or V pool: 4-D, [N][P][Hkv][dim] (NHD) or
   [N][Hkv][P][dim] (HND), dim as check_kv takes it (or a block type's raw
   bytes); returns N. */
static int64_t check_pool(const char *path, const attn_npy *a, const attn_spec *spec, const char *dim_name,
                          int64_t dim)
{
    const int hnd = spec->page_order == ATTN_PAGE_HND;
    const int values = attn_dtype_values(spec->dtype_kv);
    const int raw = values > 1 && a->dtype == ATTN_NPY_U8;
    const int64_t d = raw ? dim / values * (int64_t)attn_dtype_size(spec->dtype_kv) : dim;
    char shp[160];
    if (a->ndim != 4 || a->shape[1] != (hnd ? spec->heads_kv : spec->page) ||
        a->shape[2] != (hnd ? spec->page : spec->heads_kv) || a->shape[3] != d)
        fail(path, "expected a pool of pages %s with %s %d, page %d and %s %lld%s, got shape %s",
             hnd ? "[pages][heads_kv][page][dim] (order HND)" : "[pages][page][heads_kv][dim] (order NHD)",
             "heads_kv", spec->heads_kv, spec->page, dim_name, (long long)d, raw ? " (the blocks' bytes)" : "",
             attn_npy_shape_string(a, shp, sizeof shp));
    return a->shape[0];
}

/* --block-table: int32 [B][M] (B: Q's batch); the keys' capacity is M * P. */
static void load_table(const char *path, const attn_spec *spec, int64_t batch, run_inputs *in)
{
    char err[256], shp[160];
    load(path, &in->bta);
    if (in->bta.ndim != 2 || in->bta.shape[0] != batch || in->bta.shape[1] < 1)
        fail(path, "expected a block table [batch][pages a sequence] with batch %lld, got shape %s",
             (long long)batch, attn_npy_shape_string(&in->bta, shp, sizeof shp));
    if (in->bta.shape[1] > ((int64_t)1 << 62) / spec->page)
        fail(path, "%lld pages of %d keys are too many keys", (long long)in->bta.shape[1], spec->page);
    if (attn_npy_to_i32(&in->bta, &in->table, err, sizeof err) != 0)
        fail(path, "%s", err);
}

/* Paged configs: K and V pools and the block table, read (or, with
   --random-inputs, the contiguous K and V drawn, read through a table of
   their rows); the args' pool strides, table and pages. */
static void load_paged(const run_options *opt, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    int64_t nv;
    if (opt->random) {
        in->table = (int32_t *)malloc((size_t)(args->batch * ((args->seq_k + spec->page - 1) / spec->page)) *
                                          sizeof(int32_t) + 1);
        if (in->table == NULL)
            fail("--random-inputs", "out of memory");
        if (attn_args_set_contiguous_pages(args, spec, in->table) != ATTN_OK)
            fail("--random-inputs", "the keys do not fit a block table of int32 entries");
        return;
    }
    args->block_table = in->table;
    args->block_table_stride = in->bta.shape[1];
    args->num_pages = in->pages;
    nv = check_pool(opt->v_path, &in->va, spec, "head_dim_v", spec->head_dim_v);
    if (nv != in->pages)
        fail(opt->v_path, "%lld pages do not match %s's %lld", (long long)nv, opt->k_path, (long long)in->pages);
}

/* Q, K, V: shapes first, then the data in the kernel's storage types;
   fills the args' shape, strides and tensors. */
static void load_qkv(const run_options *opt, const attn_spec *spec, run_inputs *in,
                     attn_args *args)
{
    if (opt->random) {
        random_qkv(opt, spec, in);
        fill_qkv_args(opt, spec, in, args);
        if (spec->page > 0)
            load_paged(opt, spec, in, args);
        return;
    }
    load(opt->q_path, &in->qa);
    in->qt = check_bshd(opt->q_path, &in->qa, "seq_q", "heads_q", spec->heads_q, "head_dim",
                        spec->head_dim);
    load(opt->k_path, &in->ka);
    if (spec->page > 0) { /* pools of pages, and the table that gives the batch's keys */
        load(opt->v_path, &in->va);
        in->pages = check_pool(opt->k_path, &in->ka, spec, "head_dim", spec->head_dim);
        in->pooled = 1;
        load_table(opt->bt_path, spec, in->qt.batch, in);
        in->kt.ndim = in->vt.ndim = 4;
        in->kt.batch = in->vt.batch = in->qt.batch;
        in->kt.len = in->vt.len = in->bta.shape[1] * spec->page;
        in->q = load_stored(opt->q_path, &in->qa, spec->dtype_q);
        in->k = load_kv(opt->k_path, &in->ka, spec->dtype_kv);
        in->v = load_kv(opt->v_path, &in->va, spec->dtype_kv);
        fill_qkv_args(opt, spec, in, args);
        load_paged(opt, spec, in, args);
        return;
    }
    in->kt = check_kv(opt->k_path, &in->ka, spec, "head_dim", spec->head_dim);
    if (in->kt.batch != in->qt.batch)
        fail(opt->k_path, "batch %lld does not match %s's batch %lld", (long long)in->kt.batch,
             opt->q_path, (long long)in->qt.batch);
    in->q = load_stored(opt->q_path, &in->qa, spec->dtype_q);
    in->k = load_kv(opt->k_path, &in->ka, spec->dtype_kv);
    if (spec->shared_kv) { /* V is the first head_dim_v values of each K row */
        fill_qkv_args(opt, spec, in, args);
        return;
    }
    load(opt->v_path, &in->va);
    in->vt = check_kv(opt->v_path, &in->va, spec, "head_dim_v", spec->head_dim_v);
    if (in->vt.batch != in->qt.batch)
        fail(opt->v_path, "batch %lld does not match %s's batch %lld", (long long)in->vt.batch,
             opt->q_path, (long long)in->qt.batch);
    if (in->vt.len != in->kt.len)
        fail(opt->v_path, "seq_k %lld does not match %s's seq_k %lld", (long long)in->vt.len,
             opt->k_path, (long long)in->kt.len);
    in->v = load_kv(opt->v_path, &in->va, spec->dtype_kv);
    fill_qkv_args(opt, spec, in, args);
}

/* The args' shape, strides and tensors from the inputs. */
static void fill_qkv_args(const run_options *opt, const attn_spec *spec, const run_inputs *in, attn_args *args)
{
    memset(args, 0, sizeof *args);
    args->batch = in->qt.batch;
    args->seq_q = in->qt.len;
    args->seq_k = in->kt.len;
    attn_args_set_contiguous(args, spec);
    args->q = in->q;
    args->k = in->k;
    args->v = in->v;
    args->threads = opt->threads;
    args->dropout_p = opt->dropout_p;
    args->dropout_seed = opt->dropout_seed;
    args->dropout_offset = opt->dropout_offset;
}

/* seqlens_k: one valid key length per batch, each in 0..seq_k; read into
   *sa, returned as int32 (malloc'ed). */
static int32_t *read_seqlens(const char *path, const attn_spec *spec, attn_npy *sa, int64_t batch, int64_t seq_k)
{
    int32_t *seqlens = (int32_t *)load_vector(path, spec, "--seqlens-k", batch, sa);
    int64_t b;
    for (b = 0; b < batch; b++)
        if (seqlens[b] < 0 || seqlens[b] > seq_k)
            fail(path, "seqlens_k[%d] = %ld is outside 0..%lld (seq_k)", (int)b, (long)seqlens[b],
                 (long long)seq_k);
    return seqlens;
}

/* --sinks: a logit per query head, shape (Hq,), read as f32. */
static void load_sinks(const char *path, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    in->sinks = (float *)load_vector(path, spec, "--sinks", 0, &in->sinks_a);
    args->sinks = in->sinks;
}

/* --rope-cos, --rope-sin: [T][rope_dim / 2] each, the same T, read as f32. */
static void load_rope(const run_options *opt, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    char err[256], shp[160];
    int a;
    for (a = 0; a < 2; a++) {
        const char *path = opt->rope_path[a];
        load(path, &in->rope_a[a]);
        if (in->rope_a[a].ndim != 2 || in->rope_a[a].shape[1] != spec->rope_dim / 2)
            fail(path, "expected shape (T, %d) (a position's cos or sin of each rotated pair), got %s",
                 spec->rope_dim / 2, attn_npy_shape_string(&in->rope_a[a], shp, sizeof shp));
        if (a == 1 && in->rope_a[1].shape[0] != in->rope_a[0].shape[0])
            fail(path, "has %lld positions, --rope-cos %lld: they must agree", (long long)in->rope_a[1].shape[0],
                 (long long)in->rope_a[0].shape[0]);
        if (attn_npy_to_f32(&in->rope_a[a], &in->rope[a], err, sizeof err) != 0)
            fail(path, "%s", err);
    }
    args->rope_cos = in->rope[0];
    args->rope_sin = in->rope[1];
    args->rope_rows = in->rope_a[0].shape[0];
}

static void load_seqlens(const char *path, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    in->seqlens = read_seqlens(path, spec, &in->sa, args->batch, args->seq_k);
    args->seqlens_k = in->seqlens;
}

/* The mask: [Lq][Lk] for every b and h, or [B|1][Hq|1][Lq][Lk]; bool or
   uint8 for mask "bool", f32 or f64 (read as f32) for mask "bias". */
static void load_mask(const char *path, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    const int64_t lq = args->seq_q, lk = args->seq_k;
    attn_npy *ma = &in->ma;
    char shp[160];

    load(path, ma);
    if (spec->mask == ATTN_MASK_BOOL && ma->dtype != ATTN_NPY_BOOL && ma->dtype != ATTN_NPY_U8)
        fail(path, "dtype %s does not match the config's mask \"bool\" (expected bool or "
                   "uint8)",
             attn_npy_dtype_name(ma->dtype));
    if (spec->mask == ATTN_MASK_BIAS && ma->dtype != ATTN_NPY_F32 && ma->dtype != ATTN_NPY_F64)
        fail(path, "dtype %s does not match the config's mask \"bias\" (expected float32 "
                   "or float64)",
             attn_npy_dtype_name(ma->dtype));
    if (ma->ndim == 2 && ma->shape[0] == lq && ma->shape[1] == lk) {
        args->mask_stride[0] = 0; /* one [Lq][Lk] matrix for every b and h */
        args->mask_stride[1] = 0;
    } else if (ma->ndim == 4 && (ma->shape[0] == args->batch || ma->shape[0] == 1) &&
               (ma->shape[1] == spec->heads_q || ma->shape[1] == 1) && ma->shape[2] == lq &&
               ma->shape[3] == lk) {
        args->mask_stride[1] = ma->shape[1] == 1 ? 0 : lq * lk;
        args->mask_stride[0] = ma->shape[0] == 1 ? 0 : ma->shape[1] * lq * lk;
    } else {
        fail(path, "shape %s does not match: expected [seq_q][seq_k] = (%lld, %lld) or "
                   "[batch|1][heads_q|1][seq_q][seq_k] = (%lld|1, %d|1, %lld, %lld)",
             attn_npy_shape_string(ma, shp, sizeof shp), (long long)lq, (long long)lk,
             (long long)args->batch, spec->heads_q, (long long)lq, (long long)lk);
    }
    args->mask_stride[2] = lk;
    args->mask_stride[3] = 1;
    if (spec->mask == ATTN_MASK_BIAS) {
        in->bias = load_f32(path, ma);
        args->mask = in->bias;
    } else {
        args->mask = ma->data; /* bytes, nonzero = keep */
    }
}

/* The relative position table of a config with rel_bias: [rows][heads_q],
   float32 or float64 (read as f32). */
static void load_rel(const char *path, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    attn_npy *ra = &in->ra;
    char shp[160];

    load(path, ra);
    if (ra->dtype != ATTN_NPY_F32 && ra->dtype != ATTN_NPY_F64)
        fail(path, "dtype %s: the relative position table must be float32 or float64", attn_npy_dtype_name(ra->dtype));
    if (ra->ndim != 2 || ra->shape[0] != attn_rel_rows(spec) || ra->shape[1] != spec->heads_q)
        fail(path, "shape %s does not match: expected [rows][heads_q] = (%d, %d)",
             attn_npy_shape_string(ra, shp, sizeof shp), attn_rel_rows(spec), spec->heads_q);
    in->rel = load_f32(path, ra);
    args->rel_table = in->rel;
}

/* The state of a linear config with state = true: S [B][Hkv][D][Dv] and z
   [B][Hkv][D], f32, zero or read from --state-in (float32 or float64, with
   or without the batch dim when B is 1), attached to the args. */
static void load_state(const run_options *opt, const attn_spec *spec, run_inputs *in, attn_args *args,
                       run_outputs *out)
{
    static const char *const what[2] = { "[batch][heads_kv][head_dim][head_dim_v]", "[batch][heads_kv][head_dim]" };
    int t, d;

    out->state_shape[0][0] = out->state_shape[1][0] = args->batch;
    out->state_shape[0][1] = out->state_shape[1][1] = spec->heads_kv;
    out->state_shape[0][2] = out->state_shape[1][2] = spec->head_dim;
    out->state_shape[0][3] = spec->head_dim_v;
    for (t = 0; t < 2; t++) {
        const int ndim = 4 - t;
        size_t n = 1;
        for (d = 0; d < ndim; d++) {
            if ((size_t)out->state_shape[t][d] > 0 && n > SIZE_MAX / sizeof(float) / (size_t)out->state_shape[t][d])
                fail(spec->name, "the state is too large");
            n *= (size_t)out->state_shape[t][d];
        }
        if (opt->s_in[t] == NULL) {
            out->state[t] = (float *)calloc(n + 1, sizeof(float));
            if (out->state[t] == NULL)
                fail(spec->name, "out of memory");
            continue;
        }
        {
            const char *path = opt->s_in[t];
            attn_npy *a = &in->state_a[t];
            char shp[160];
            int ok, off;
            load(path, a);
            /* with or without the batch dim (B = 1) */
            off = a->ndim == ndim ? 1 : a->ndim == ndim - 1 && args->batch == 1 ? 0 : -1;
            ok = off >= 0;
            for (d = 0; ok && d < ndim - 1 + off; d++)
                ok = a->shape[d] == out->state_shape[t][d + 1 - off];
            if (!ok) {
                char want[160];
                snprintf(want, sizeof want, t == 0 ? "(%lld, %d, %d, %d)" : "(%lld, %d, %d)", (long long)args->batch,
                         spec->heads_kv, spec->head_dim, spec->head_dim_v);
                fail(path, "shape %s does not match the config: expected %s %s = %s%s",
                     attn_npy_shape_string(a, shp, sizeof shp), t == 0 ? "S" : "z", what[t], want,
                     args->batch == 1 ? " (or without the batch dim)" : "");
            }
            out->state[t] = load_f32(path, a);
        }
    }
    args->state_s = out->state[0];
    args->state_z = out->state[1];
}

/* An output of data held elsewhere (the state, the caches), written to path
   as npy with the shape given. */
static void add_output(run_outputs *out, const attn_spec *spec, const char *opt_name, const char *path, int ndim,
                       const int64_t *shape, const void *data, attn_npy_dtype npy, int batched)
{
    run_output *o = &out->slot[out->n++];
    int d;
    o->t = tensor_of(spec, ATTN_DIR_FWD, opt_name);
    o->path = path;
    o->ndim = ndim;
    o->batched = batched;
    for (d = 0; d < ndim; d++)
        o->shape[d] = shape[d];
    o->data = (void *)(uintptr_t)data;
    o->borrowed = 1;
    o->dtype = ATTN_DTYPE_F32;
    o->npy = npy;
}

/* The outputs the options name in the family's tensors for a direction (O's
   or a gradient's storage type as their store says, f32 with --reference
   and otherwise), shaped by their
   named dims for the call's batch, seq_q and seq_k, allocated in order; the
   first n_always also without a path (the kernel writes them whatever);
   label names the file a failure is reported on when a path is NULL.
   Returns the first output's slot. */
static run_output *alloc_outputs(run_outputs *out, const attn_spec *spec, const run_options *opt, attn_direction dir,
                                 const char *const *names, const char *const *paths, int n_names, int n_always,
                                 const int64_t call[3])
{
    run_output *first = &out->slot[out->n];
    int i, d;
    for (i = 0; i < n_names; i++) {
        const attn_case_tensor *t = tensor_of(spec, dir, names[i]);
        const char *label = paths[i] != NULL ? paths[i] : paths[0];
        run_output *o = &out->slot[out->n];
        size_t n = 1;
        if (paths[i] == NULL && i >= n_always)
            continue;
        out->n++;
        o->t = t;
        o->path = paths[i];
        o->ndim = t->ndim;
        o->batched = t->dims[0] == ATTN_DIM_BATCH;
        o->dtype = opt->use_reference           ? ATTN_DTYPE_F32
                   : t->store == ATTN_STORE_O      ? spec->dtype_o
                   : t->store == ATTN_STORE_GRAD_Q  ? spec->dtype_grad_q
                   : t->store == ATTN_STORE_GRAD_KV ? spec->dtype_grad_kv
                                                    : ATTN_DTYPE_F32;
        o->npy = o->dtype == ATTN_DTYPE_F16 ? ATTN_NPY_F16 : ATTN_NPY_F32;
        for (d = 0; d < t->ndim; d++) {
            o->shape[d] = attn_dim_value(t->dims[d], spec, call[0], call[1], call[2]);
            if (o->shape[d] > 0 && n > SIZE_MAX / sizeof(float) / ((size_t)o->shape[d] + 1))
                fail(label, strcmp(names[i], "--weights") == 0 ? "the weights are too large"
                                                                : "the output is too large");
            n *= (size_t)o->shape[d];
        }
        o->count = n;
        o->data = malloc(n * attn_dtype_size(o->dtype) + 1);
        if (o->data == NULL)
            fail(label, "out of memory");
    }
    return first;
}

/* The data of an output by option, NULL when not allocated. */
static void *output_data(const run_outputs *out, const char *opt_name)
{
    int i;
    for (i = 0; i < out->n; i++)
        if (strcmp(out->slot[i].t->opt, opt_name) == 0)
            return out->slot[i].data;
    return NULL;
}

static void free_outputs(run_outputs *out)
{
    int i;
    for (i = 0; i < out->n; i++) {
        if (!out->slot[i].borrowed)
            free(out->slot[i].data);
        free(out->slot[i].wide);
    }
    free(out->state[0]);
    free(out->state[1]);
    free(out->kv_wide[0]);
    free(out->kv_wide[1]);
}

/* --average-heads: the weights' mean over the query heads, in place:
   [B][Hq][Lq][Lk] becomes [B][Lq][Lk] (summed in double). */
static void average_heads(run_output *w)
{
    const int64_t B = w->shape[0], H = w->shape[1], n = w->shape[2] * w->shape[3];
    float *p = (float *)w->data;
    int64_t b, h, e;
    for (b = 0; b < B; b++)
        for (e = 0; e < n; e++) {
            double sum = 0.0;
            for (h = 0; h < H; h++)
                sum += p[(b * H + h) * n + e];
            p[b * n + e] = (float)(sum / (double)H); /* b * n + e <= (b * H) * n + e */
        }
    w->shape[1] = w->shape[2];
    w->shape[2] = w->shape[3];
    w->ndim = 3;
}

/* --isa with --k-new: a variant's entry point attends only, so the kernel's
   own entry stores the new rows in a call over no query rows (its checks
   first: nothing written when one fails), and the variant then attends over
   seqlens_k[b] + Ln keys: the bits of one call with k_new on that variant. */
static attn_status variant_append(const attn_kernel *kernel, const attn_variant *variant, run_inputs *in,
                                  const attn_args *args)
{
    attn_args store = *args, attend = *args;
    attn_status st;
    int64_t b;
    store.seq_q = 0;
    store.weights = NULL;
    store.entropy = NULL;
    st = kernel->fwd(&store);
    if (st != ATTN_OK)
        return st;
    in->after = (int32_t *)malloc((size_t)args->batch * sizeof(int32_t) + 1);
    if (in->after == NULL)
        return ATTN_ERR_NOMEM;
    for (b = 0; b < args->batch; b++)
        in->after[b] = args->seqlens_k[b] + (int32_t)args->seq_new;
    attend.k_new = attend.v_new = NULL;
    attend.seq_new = 0;
    attend.seqlens_k = in->after;
    st = attn_check_args(&kernel->spec, &attend);
    return st == ATTN_OK ? variant->fwd(&attend) : st;
}

/* The reference (on the stored inputs, widened), the variant --isa names,
   or the kernel's dispatch. */
static void compute(const attn_kernel *kernel, const attn_variant *variant, int use_reference,
                    run_inputs *in, const attn_args *args)
{
    const attn_spec *spec = &kernel->spec;
    attn_status st;
    if (use_reference) {
        attn_args ra = *args;
        const size_t nq = (size_t)(args->batch * args->seq_q) * (size_t)spec->heads_q * (size_t)spec->head_dim;
        /* K and V rows: B * Lk, or a paged config's pools' N * P */
        const int64_t rows = in->pooled ? in->pages * spec->page : args->batch * args->seq_k;
        const size_t nk = (size_t)rows * (size_t)spec->heads_kv * (size_t)spec->head_dim;
        const size_t nv = (size_t)rows * (size_t)spec->heads_kv * (size_t)spec->head_dim_v;
        in->qw = widen_copy(spec->name, spec->dtype_q, in->q, nq);
        const int64_t values = attn_dtype_values(spec->dtype_kv);
        int d;
        in->kw = widen_copy(spec->name, spec->dtype_kv, in->k, nk);
        if (in->v != NULL) /* shared_kv: none (the reference reads V from K's rows) */
            in->vw = widen_copy(spec->name, spec->dtype_kv, in->v, nv);
        ra.q = in->qw;
        ra.k = in->kw;
        ra.v = in->vw;
        for (d = 0; d < 3; d++) { /* a block type's strides count blocks; the widened values' */
            ra.k_stride[d] *= values;
            ra.v_stride[d] *= values;
        }
        st = attn_reference(spec, &ra);
    } else if (variant != NULL && args->k_new != NULL) {
        st = variant_append(kernel, variant, in, args);
    } else if (variant != NULL) {
        st = attn_check_args(spec, args);
        if (st == ATTN_OK)
            st = variant->fwd(args);
    } else {
        st = kernel->fwd(args);
    }
    if (st != ATTN_OK)
        fail(spec->name, "%s", attn_status_string(st));
}

/* Writes one output next to its path (none where path is NULL; attn_npy_stage). */
static void stage(attn_npy_staged *sf, const char *path, int ndim, const int64_t *shape, const void *data,
                  attn_npy_dtype dtype)
{
    char err[256];
    if (attn_npy_stage(sf, path, dtype, ndim, shape, data, err, sizeof err) != 0)
        fail(path, "%s", err);
}

/* Renames the staged outputs into place (attn_npy_publish). */
static void publish(attn_npy_staged *sf)
{
    char err[256];
    const char *failed = NULL;
    if (attn_npy_publish(sf, &failed, err, sizeof err) != 0)
        fail(failed, "%s", err);
}

/* Writes the outputs with a path next to their paths, in order, then
   renames them into place: every output complete before any replaces what
   was there.  A 3-D input (no batch dim) gives outputs without one. */
static void publish_outputs(const run_options *opt, int drop_batch, run_outputs *out)
{
    attn_npy_staged sf;
    int t;

    memset(&sf, 0, sizeof sf);
    for (t = 0; t < out->n; t++) {
        run_output *o = &out->slot[t];
        const int drop = o->batched ? drop_batch : 0;
        const void *data = o->data;
        if (o->path == NULL)
            continue;
        if (o->dtype == ATTN_DTYPE_BF16) { /* .npy has no bf16: f32, exactly */
            o->wide = widen_copy(o->path, ATTN_DTYPE_BF16, o->data, o->count);
            data = o->wide;
        }
        if (opt->average_heads && strcmp(o->t->opt, "--weights") == 0)
            average_heads(o);
        stage(&sf, o->path, o->ndim - drop, o->shape + drop, data, o->npy);
    }
    publish(&sf);
}

static void free_all(const run_options *opt, run_inputs *in, run_outputs *out)
{
    attn_npy_free(&in->qa);
    attn_npy_free(&in->ka);
    attn_npy_free(&in->va);
    if (opt->s_path != NULL)
        attn_npy_free(&in->sa);
    if (opt->m_path != NULL)
        attn_npy_free(&in->ma);
    if (opt->r_path != NULL)
        attn_npy_free(&in->ra);
    free(in->rel);
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->qw);
    free(in->kw);
    free(in->vw);
    free(in->bias);
    free(in->seqlens);
    free(in->sinks);
    free(in->table);
    if (opt->bt_path != NULL)
        attn_npy_free(&in->bta);
    if (opt->sinks_path != NULL)
        attn_npy_free(&in->sinks_a);
    free(in->rope[0]);
    free(in->rope[1]);
    if (opt->rope_path[0] != NULL) {
        attn_npy_free(&in->rope_a[0]);
        attn_npy_free(&in->rope_a[1]);
    }
    free_outputs(out);
    attn_npy_free(&in->state_a[0]);
    attn_npy_free(&in->state_a[1]);
    if (opt->kn_path != NULL)
        attn_npy_free(&in->kna);
    if (opt->vn_path != NULL)
        attn_npy_free(&in->vna);
    free(in->kn);
    free(in->vn);
    free(in->after);
}

/* ---- additive and luong configs (attn_classic_args) --------------------- */

/* "[1000, 512]": a shape as the messages about classic inputs print it */
static const char *dims_str(int ndim, const int64_t *dims, char *buf, size_t len)
{
    size_t pos = 0;
    int d;
    pos += (size_t)snprintf(buf, len, "[");
    for (d = 0; d < ndim && pos < len; d++)
        pos += (size_t)snprintf(buf + pos, len - pos, d == 0 ? "%lld" : ", %lld", (long long)dims[d]);
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
    return buf;
}

/* 'kind = "additive"' or 'kind = "luong", score = "general"' */
static const char *classic_kind(const attn_spec *spec, char *buf, size_t len)
{
    static const char *const scores[] = { "none", "additive", "dot", "general", "concat" };
    if (spec->family == ATTN_FAMILY_LUONG && spec->score >= ATTN_SCORE_DOT && spec->score <= ATTN_SCORE_CONCAT)
        snprintf(buf, len, "kind = \"luong\", score = \"%s\"", scores[spec->score]);
    else
        snprintf(buf, len, "kind = \"%s\"", attn_family_name(spec->family));
    return buf;
}

/* Which inputs a config reads (CL_*), by the family's tensors: 1 required,
   0 not accepted, -1 optional (additive: W_h or U, one of the two). */
static void classic_takes(const attn_spec *spec, int take[CL_COUNT])
{
    char why[160];
    int c;
    for (c = 0; c < CL_COUNT; c++) {
        const attn_takes t = attn_case_tensor_takes(tensor_of(spec, ATTN_DIR_FWD, classic_opt[c]), spec, why, sizeof why);
        take[c] = t == ATTN_TAKES_REQUIRED ? 1 : t == ATTN_TAKES_OPTIONAL ? -1 : 0;
    }
}

/* The shape input c must have, by its named dims in the family's tensors
   (batch, seq_q and seq_k: from S and H), and the dims' names. */
static int classic_want(const attn_spec *spec, int c, int64_t batch, int64_t seq_q, int64_t seq_k,
                        int64_t dims[3], char *names, size_t len)
{
    const attn_case_tensor *t = tensor_of(spec, ATTN_DIR_FWD, classic_opt[c]);
    int d;
    names[0] = '\0';
    for (d = 0; d < t->ndim; d++) {
        dims[d] = attn_dim_value(t->dims[d], spec, batch, seq_q, seq_k);
        if (d > 0)
            strncat(names, ", ", len - strlen(names) - 1);
        strncat(names, attn_dim_name(t->dims[d]), len - strlen(names) - 1);
    }
    return t->ndim;
}

/* The inputs as read: each one's label ("--w-s W.npy"), array and data in
   its storage type (S: dtype_q, the others dtype_kv); seqlens_k and the
   mask. */
typedef struct {
    char *label[CL_COUNT];
    attn_npy a[CL_COUNT];
    void *stored[CL_COUNT];
    attn_npy sa, ma;
    int32_t *seqlens;
    int drop_batch; /* S without its batch dim: the outputs have none either */
} classic_inputs;

/* The classic command line against the config: the inputs its score reads
   and nothing else, outputs that replace no input. */
static void check_classic_paths(const run_options *opt, const attn_spec *spec)
{
    static const char *const sdpa_opt[3] = { "--q", "--k", "--v" };
    const char *sdpa_path[3];
    char kind[64], takes[160] = "";
    int take[CL_COUNT], c;

    classic_kind(spec, kind, sizeof kind);
    classic_takes(spec, take);
    sdpa_path[0] = opt->q_path;
    sdpa_path[1] = opt->k_path;
    sdpa_path[2] = opt->v_path;
    for (c = 0; c < 3; c++)
        if (sdpa_path[c] != NULL)
            fail(sdpa_opt[c], "the config '%s' has %s, which takes --s and --h; %s is for sdpa and linear configs",
                 spec->name, kind, sdpa_opt[c]);
    if (opt->lse_path != NULL)
        fail("--lse", "the config '%s' has %s, which has no LSE", spec->name, kind);
    if (opt->s_in[0] != NULL || opt->s_out[0] != NULL)
        fail(opt->s_in[0] != NULL ? "--state-in" : "--state-out",
             "the config '%s' has %s, which has no state, so it is not accepted", spec->name, kind);
    if (opt->dropout_opt != NULL)
        fail(opt->dropout_opt, "the config '%s' has %s, which has no dropout, so %s is not accepted", spec->name,
             kind, opt->dropout_opt);
    if (opt->sinks_path != NULL)
        fail(opt->sinks_path, "the config '%s' has %s, which has no sinks, so --sinks is not accepted", spec->name,
             kind);
    if (opt->rope_path[0] != NULL || opt->rope_path[1] != NULL)
        fail(opt->rope_path[0] != NULL ? "--rope-cos" : "--rope-sin",
             "the config '%s' has %s, which has no rope, so it is not accepted", spec->name, kind);
    check_qk_norm_paths(opt, spec);
    if (opt->random || opt->seq_q != 0 || opt->seq_k != 0 || opt->batch != 0)
        fail(opt->random ? "--random-inputs" : opt->seq_q != 0 ? "--seq-q" : opt->seq_k != 0 ? "--seq-k" : "--batch",
             "the config '%s' has %s, which reads its inputs from --s and --h", spec->name, kind);
    if (opt->e_path != NULL)
        fail(opt->e_path, "the config '%s' has %s, which has no entropy, so --entropy is not accepted", spec->name,
             kind);
    if (opt->average_heads)
        fail("--average-heads", "the config '%s' has %s: one head, so the weights --weights writes are "
                                "[batch][seq_q][seq_k] already",
             spec->name, kind);
    for (c = 0; c < CL_COUNT; c++)
        if (take[c] != 0) {
            if (takes[0] != '\0')
                strncat(takes, ", ", sizeof takes - strlen(takes) - 1);
            strncat(takes, classic_opt[c], sizeof takes - strlen(takes) - 1);
        }
    for (c = 0; c < CL_COUNT; c++) {
        if (opt->cl[c] != NULL && take[c] == 0)
            fail(classic_opt[c], c == CL_B ? "the config '%s' has no bias (bias = true), so %s is not accepted"
                                           : "the config '%s' (%s) reads no such input (it takes %s)",
                 spec->name, c == CL_B ? classic_opt[c] : kind, takes);
        if (opt->cl[c] == NULL && take[c] == 1)
            fail(classic_opt[c], "required: the config '%s' has %s%s", spec->name, kind,
                 c == CL_B ? " and bias = true" : "");
    }
    if (take[CL_U] != 0 && opt->cl[CL_U] == NULL && opt->cl[CL_W_H] == NULL)
        fail("--w-h", "required, or --u: the config '%s' has %s (U = H W_h^T, when given, replaces W_h)",
             spec->name, kind);
    if (opt->cl[CL_U] != NULL && opt->cl[CL_W_H] != NULL)
        fail("--w-h", "give --w-h or --u, not both (U = H W_h^T replaces W_h: the kernel does not read W_h then)");
    if (opt->o_path == NULL)
        fail("-o", "required (where to write the context C)");

    /* outputs: never an input, never each other */
    if (opt->p_path != NULL && same_file(opt->p_path, opt->o_path))
        fail("--weights", "must differ from -o");
    check_replaces(opt, attn_case_ops_for(spec, ATTN_DIR_FWD)->tensors);
    check_taken(opt, spec, attn_case_ops_for(spec, ATTN_DIR_FWD)->tensors);
}

/* Reads input c and checks its shape against what the config and S (batch,
   seq_q) and H (seq_k) say; S and H set *batch, *seq_q and *seq_k. */
static void load_classic_input(const run_options *opt, const attn_spec *spec, int c, classic_inputs *in,
                               int64_t *batch, int64_t *seq_q, int64_t *seq_k)
{
    const char *path = opt->cl[c];
    attn_npy *a = &in->a[c];
    int64_t want[3];
    char names[96];
    char shp[160], exp[160], from[400] = "", sshp[160], hshp[160];
    const size_t len = strlen(classic_opt[c]) + strlen(path) + 2;
    int nd, ok, d, off;

    in->label[c] = (char *)malloc(len);
    if (in->label[c] == NULL)
        fail(path, "out of memory");
    snprintf(in->label[c], len, "%s %s", classic_opt[c], path);
    load_label(in->label[c], path, a);
    nd = classic_want(spec, c, *batch, *seq_q, *seq_k, want, names, sizeof names);
    if (nd == 3) {
        /* [batch][len][dim], or [len][dim] for batch 1 */
        if (a->ndim != 3 && a->ndim != 2)
            fail(in->label[c], "expected a 3-D array [%s] (or 2-D without the batch dim: batch 1), got shape %s",
                 names, dims_str(a->ndim, a->shape, shp, sizeof shp));
        off = a->ndim - 2;
        if (c == CL_S) { /* S gives batch and seq_q */
            *batch = want[0] = off ? a->shape[0] : 1;
            *seq_q = want[1] = a->shape[off];
            in->drop_batch = a->ndim == 2;
        } else if (c == CL_H) { /* H gives seq_k */
            *seq_k = want[1] = a->shape[off];
        }
        ok = (off ? a->shape[0] : 1) == want[0];
        for (d = 1; d < 3; d++)
            ok = ok && a->shape[off + d - 1] == want[d];
        if (!ok) {
            if (c == CL_H)
                snprintf(from, sizeof from, " and --s %s's shape %s", opt->cl[CL_S],
                         dims_str(in->a[CL_S].ndim, in->a[CL_S].shape, sshp, sizeof sshp));
            else if (c == CL_U)
                snprintf(from, sizeof from, ", --s %s's shape %s and --h %s's shape %s", opt->cl[CL_S],
                         dims_str(in->a[CL_S].ndim, in->a[CL_S].shape, sshp, sizeof sshp), opt->cl[CL_H],
                         dims_str(in->a[CL_H].ndim, in->a[CL_H].shape, hshp, sizeof hshp));
            fail(in->label[c], "shape %s does not match [%s] = %s of the config%s",
                 dims_str(a->ndim, a->shape, shp, sizeof shp), names, dims_str(3, want, exp, sizeof exp), from);
        }
    } else {
        ok = a->ndim == nd;
        for (d = 0; ok && d < nd; d++)
            ok = a->shape[d] == want[d];
        if (!ok)
            fail(in->label[c], "shape %s does not match [%s] = %s of the config",
                 dims_str(a->ndim, a->shape, shp, sizeof shp), names, dims_str(nd, want, exp, sizeof exp));
    }
    in->stored[c] = load_stored(in->label[c], a, c == CL_S ? spec->dtype_q : spec->dtype_kv);
}

/* The mask of a classic config: bool or uint8, [Lq][Lk] for every batch
   entry or [B|1][Lq][Lk]. */
static void load_classic_mask(const char *path, classic_inputs *in, attn_classic_args *args)
{
    const int64_t lq = args->seq_q, lk = args->seq_k;
    attn_npy *ma = &in->ma;
    char shp[160];

    load(path, ma);
    if (ma->dtype != ATTN_NPY_BOOL && ma->dtype != ATTN_NPY_U8)
        fail(path, "dtype %s does not match the config's mask \"bool\" (expected bool or uint8)",
             attn_npy_dtype_name(ma->dtype));
    if (ma->ndim == 2 && ma->shape[0] == lq && ma->shape[1] == lk) {
        args->mask_stride[0] = 0; /* one [Lq][Lk] matrix for every b */
    } else if (ma->ndim == 3 && (ma->shape[0] == args->batch || ma->shape[0] == 1) && ma->shape[1] == lq &&
               ma->shape[2] == lk) {
        args->mask_stride[0] = ma->shape[0] == 1 ? 0 : lq * lk;
    } else {
        fail(path, "shape %s does not match: expected [seq_q][seq_k] = (%lld, %lld) or "
                   "[batch|1][seq_q][seq_k] = (%lld|1, %lld, %lld)",
             attn_npy_shape_string(ma, shp, sizeof shp), (long long)lq, (long long)lk, (long long)args->batch,
             (long long)lq, (long long)lk);
    }
    args->mask_stride[1] = lk;
    args->mask_stride[2] = 1;
    args->mask = (const uint8_t *)ma->data; /* bytes, nonzero = keep */
}


/* The reference (on the stored inputs; C unrounded, f32), the variant
   --isa names, or the kernel's dispatch. */
static void compute_classic(const attn_kernel *kernel, const attn_variant *variant, int use_reference,
                            const attn_classic_args *args)
{
    const attn_spec *spec = &kernel->spec;
    attn_status st;
    if (use_reference) {
        attn_spec rs = *spec; /* the reference reads the storage types and writes C as rs.dtype_o */
        rs.dtype_o = ATTN_DTYPE_F32;
        st = attn_reference_classic(&rs, args);
    } else if (variant != NULL) {
        st = attn_check_classic_args(spec, args);
        if (st == ATTN_OK)
            st = variant->classic_fwd(args);
    } else {
        st = kernel->classic_fwd(args);
    }
    if (st != ATTN_OK)
        fail(spec->name, "%s", attn_status_string(st));
}

/* `attngen run` for an additive or luong config: the inputs by name, C
   (and A) out, published as the other families' outputs are. */
static int run_classic(const attn_kernel *kernel, const run_options *opt)
{
    const attn_spec *spec = &kernel->spec;
    const attn_variant *variant = NULL;
    classic_inputs in;
    run_outputs out;
    attn_classic_args args;
    int64_t batch = 0, seq_q = 0, seq_k = 0;
    int c;

    check_classic_paths(opt, spec);
    if (opt->kn_path != NULL || opt->vn_path != NULL || opt->kv_out[0] != NULL || opt->kv_out[1] != NULL)
        fail(opt->kn_path != NULL ? "--k-new" : opt->vn_path != NULL ? "--v-new" : opt->kv_out[0] != NULL ? "--k-out"
                                                                                                        : "--v-out",
             "the config '%s' has kind = \"%s\": appending new keys is for sdpa configs", spec->name,
             attn_family_name(spec->family));
    if (opt->isa_name != NULL && !opt->use_reference)
        variant = pick_isa(kernel, opt->isa_name);
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    /* S first (batch, seq_q), then H (seq_k), then the rest against both */
    for (c = 0; c < CL_COUNT; c++)
        if (opt->cl[c] != NULL)
            load_classic_input(opt, spec, c, &in, &batch, &seq_q, &seq_k);

    memset(&args, 0, sizeof args);
    args.batch = batch;
    args.seq_q = seq_q;
    args.seq_k = seq_k;
    attn_classic_args_set_contiguous(&args, spec);
    args.s = in.stored[CL_S];
    args.h = in.stored[CL_H];
    args.u = in.stored[CL_U];
    args.w_s = in.stored[CL_W_S];
    args.w_h = in.stored[CL_W_H];
    args.w = in.stored[CL_W];
    args.v_attn = in.stored[CL_V];
    args.b_attn = in.stored[CL_B];
    args.threads = opt->threads;
    if (opt->s_path != NULL) {
        in.seqlens = read_seqlens(opt->s_path, spec, &in.sa, batch, seq_k);
        args.seqlens_k = in.seqlens;
    }
    if (opt->m_path != NULL)
        load_classic_mask(opt->m_path, &in, &args);
    {
        static const char *const names[2] = { "-o", "--weights" };
        const char *const paths[2] = { opt->o_path, opt->p_path };
        const int64_t call[3] = { batch, seq_q, seq_k };
        alloc_outputs(&out, spec, opt, ATTN_DIR_FWD, names, paths, 2, 1, call);
        args.c = output_data(&out, "-o");
        args.weights = output_data(&out, "--weights"); /* weights_stride: contiguous */
    }

    compute_classic(kernel, variant, opt->use_reference, &args);
    publish_outputs(opt, in.drop_batch, &out);

    for (c = 0; c < CL_COUNT; c++) {
        free(in.label[c]);
        attn_npy_free(&in.a[c]);
        free(in.stored[c]);
    }
    attn_npy_free(&in.sa);
    attn_npy_free(&in.ma);
    free(in.seqlens);
    free_outputs(&out);
    return 0;
}

/* run for the kernels that take attn_args (sdpa, linear attention) */
/* ---- the backward pass (--do, --dq, --dk, --dv) ------------------------ */

extern const attn_bwd_kernel *const attn_entry_bwd_kernel; /* NULL: the config has no backward pass */

/* An extra output of the backward pass (--dsinks, --drel, --dq-norm-w: flag, path): only with the backward
   options, for a config that has the parameter (has; lacks names it, what is the gradient), a
   new output apart from the others and from its parameter's input (in_flag, in_path). */
static void check_bwd_extra_path(const run_options *opt, const attn_spec *spec, int given, const char *flag,
                                 const char *path, int has, const char *lacks, const char *what, const char *in_flag,
                                 const char *in_path)
{
    int g;
    if (path == NULL)
        return;
    if (!has || !spec->backward || attn_entry_bwd_kernel == NULL)
        fail(flag, "the config '%s' has no %s, so there is no %s", spec->name,
             spec->backward ? lacks : "backward pass (backward = true)", what);
    if (given == 0)
        fail(flag, "needs the backward pass: --do, --dq, --dk and --dv");
    check_output_path(path);
    if ((opt->do_path != NULL && same_file(path, opt->do_path)) ||
        (opt->o_path != NULL && same_file(path, opt->o_path)) || (in_path != NULL && same_file(path, in_path)))
        fail(flag, "must differ from --do, %s and -o", in_flag);
    for (g = 0; g < 3; g++)
        if (opt->grad_path[g] != NULL && same_file(path, opt->grad_path[g]))
            fail(flag, "must differ from --dq, --dk and --dv");
    if (opt->dsinks_path != NULL && path != opt->dsinks_path && same_file(path, opt->dsinks_path))
        fail(flag, "must differ from --dsinks");
    if (opt->drel_path != NULL && path != opt->drel_path && same_file(path, opt->drel_path))
        fail(flag, "must differ from --drel");
}

/* The backward options: all four or none, and only for a config with backward = true. */
static void check_bwd_paths(const run_options *opt, const attn_spec *spec)
{
    static const char *const names[3] = { "--dq", "--dk", "--dv" };
    int g, given = opt->do_path != NULL;
    for (g = 0; g < 3; g++)
        given += opt->grad_path[g] != NULL;
    check_bwd_extra_path(opt, spec, given, "--dsinks", opt->dsinks_path, spec->sinks, "sinks (sinks = true)",
                         "sinks gradient", "--sinks", opt->sinks_path);
    check_bwd_extra_path(opt, spec, given, "--drel", opt->drel_path, attn_rel_rows(spec) > 0,
                         "relative position bias (rel_bias)", "relative position table's gradient", "--rel-table",
                         opt->r_path);
    check_bwd_extra_path(opt, spec, given, "--dq-norm-w", opt->dnorm_path, spec->qk_norm, "qk_norm",
                         "query norm weights' gradient", "--q-norm-w", opt->qn_path[0]);
    if (given == 0)
        return;
    if (!spec->backward || attn_entry_bwd_kernel == NULL)
        fail(opt->do_path != NULL ? "--do" : "--dq", "the config '%s' has no backward pass (backward = true)",
             spec->name);
    if (opt->do_path == NULL)
        fail("--do", "required with --dq, --dk and --dv: the gradient of the output, shaped like O");
    for (g = 0; g < 3; g++) {
        if (opt->grad_path[g] == NULL)
            fail(names[g], "required with --do: where to write the gradient");
        check_output_path(opt->grad_path[g]);
        if (same_file(opt->grad_path[g], opt->do_path) || same_file(opt->grad_path[g], opt->o_path))
            fail(names[g], "must differ from --do and -o");
    }
}

/* The backward pass after the forward: dO read as O's type, dQ, dK, dV from
   the kernel's backward (the variant of --isa), or from the float64
   reference with --reference (on the widened inputs and the reference's O). */
static void run_backward(const run_options *opt, const attn_spec *spec, const run_inputs *in, const attn_args *args,
                         run_outputs *out)
{
    static const char *const names[6] = { "--dq", "--dk", "--dv", "--dsinks", "--drel", "--dq-norm-w" };
    const char *const paths[6] = { opt->grad_path[0], opt->grad_path[1], opt->grad_path[2], opt->dsinks_path,
                                   opt->drel_path, opt->dnorm_path };
    const int64_t call[3] = { args->batch, args->seq_q, args->seq_k };
    const attn_bwd_kernel *bk = attn_entry_bwd_kernel;
    attn_npy da;
    attn_bwd_args ba;
    attn_status st;
    void *d_o;
    int g;

    load(opt->do_path, &da);
    (void)check_bshd(opt->do_path, &da, "seq_q", "heads_q", spec->heads_q, "head_dim_v", spec->head_dim_v);
    if (da.ndim != in->qt.ndim || (da.ndim == 4 && da.shape[0] != args->batch) || da.shape[da.ndim - 3] != args->seq_q)
        fail(opt->do_path, "must have the shape of the output O");
    d_o = load_stored(opt->do_path, &da, opt->use_reference ? ATTN_DTYPE_F32 : spec->dtype_o);
    attn_npy_free(&da);
    memset(&ba, 0, sizeof ba);
    ba.fwd = *args;
    attn_bwd_args_set_contiguous(&ba, spec);
    ba.fwd = *args;
    ba.fwd.weights = NULL;
    ba.fwd.entropy = NULL;
    ba.d_o = d_o;
    alloc_outputs(out, spec, opt, ATTN_DIR_BWD, names, paths, 6, 3, call); /* published with O */
    ba.dq = output_data(out, "--dq");
    ba.dk = output_data(out, "--dk");
    ba.dv = output_data(out, "--dv");
    ba.dsinks = (float *)output_data(out, "--dsinks");
    ba.drel_table = (float *)output_data(out, "--drel");
    ba.dq_norm_w = (float *)output_data(out, "--dq-norm-w");
    if (opt->use_reference) { /* compute() left the widened inputs; O is the reference's, f32 */
        ba.fwd.q = in->qw;
        ba.fwd.k = in->kw;
        ba.fwd.v = in->vw;
        st = attn_reference_backward(spec, &ba, 0);
    } else if (opt->isa_name != NULL) {
        const attn_bwd_variant *v = NULL;
        for (g = 0; g < bk->n_variants; g++)
            if (strcmp(attn_isa_name(bk->variants[g].isa), opt->isa_name) == 0)
                v = &bk->variants[g];
        st = v != NULL ? v->bwd(&ba) : ATTN_ERR_ISA;
    } else {
        st = bk->bwd(&ba);
    }
    if (st != ATTN_OK)
        fail(spec->name, "backward: %s", attn_status_string(st));
    free(d_o);
}

/* ---- appending (--k-new, --v-new; --k-out, --v-out) ----------------------- */

/* --k-new and --v-new: both or neither (shared_kv: --k-new alone), for an
   sdpa config, read from files; --k-out and --v-out only with them, each a
   new file or the cache it updates (--k-out may name --k: written in place,
   atomically), never another output (nor an input: check_replaces). */
static void check_append_paths(const run_options *opt, const attn_spec *spec)
{
    enum { N_OUT = 6 };
    const char *out_path[N_OUT] = { opt->o_path, opt->lse_path, opt->p_path, opt->e_path, opt->kv_out[0],
                                    opt->kv_out[1] };
    static const char *const out_opt[N_OUT] = { "-o", "--lse", "--weights", "--entropy", "--k-out", "--v-out" };
    const int shared = spec->family == ATTN_FAMILY_SDPA && spec->shared_kv;
    int a, b;

    if (opt->kn_path == NULL) {
        if (opt->vn_path != NULL)
            fail("--v-new", "needs --k-new (the new keys)");
        for (a = 4; a < N_OUT; a++)
            if (out_path[a] != NULL)
                fail(out_opt[a], "only with --k-new (it writes the cache after appending)");
        return;
    }
    if (spec->family != ATTN_FAMILY_SDPA)
        fail("--k-new", "the config '%s' has kind = \"%s\": appending new keys is for sdpa configs", spec->name,
             attn_family_name(spec->family));
    if (opt->random)
        fail("--k-new", "not with --random-inputs (the cache is read from --k and --v)");
    if (shared && (opt->vn_path != NULL || opt->kv_out[1] != NULL))
        fail(opt->vn_path != NULL ? "--v-new" : "--v-out",
             "the config '%s' has shared_kv (the new rows are K's alone), so it is not accepted", spec->name);
    if (!shared && opt->vn_path == NULL)
        fail("--v-new", "required with --k-new: the new values [B][Ln][Hkv][Dv]");
    if (opt->do_path != NULL)
        fail("--do", "not with --k-new (the backward pass reads the cache as given)");
    for (a = 4; a < N_OUT; a++) {
        if (out_path[a] == NULL)
            continue;
        check_output_path(out_path[a]);
        for (b = 0; b < a; b++)
            if (out_path[b] != NULL && same_file(out_path[a], out_path[b]))
                fail(out_opt[a], "must differ from %s", out_opt[b]);
    }
}

/* One file of new rows [B][Ln][Hkv][dim] (or 3-D), its batch Q's, read in
   Q's storage type; its element strides {b, t, h} into stride. */
static bshd load_new_rows(const char *path, const attn_spec *spec, attn_npy *a, void **rows, int64_t batch,
                          const char *dim_name, int64_t dim, int64_t *stride)
{
    bshd t;
    load(path, a);
    t = check_bshd(path, a, "seq_new", "heads_kv", spec->heads_kv, dim_name, dim);
    if (t.batch != batch)
        fail(path, "batch %lld does not match the queries' batch %lld", (long long)t.batch, (long long)batch);
    *rows = load_stored(path, a, spec->dtype_q);
    stride[2] = dim;
    stride[1] = spec->heads_kv * dim;
    stride[0] = t.len * spec->heads_kv * dim;
    return t;
}

/* --k-new, --v-new: the new rows attached to the args, and the lengths
   before the call checked against the cache's capacity (without padding
   they are seq_k - Ln, every sequence then attending over the whole
   cache); then the runtime's own checks (attn_check_append), so that
   --reference refuses what the kernel refuses. */
static void load_append(const run_options *opt, const attn_spec *spec, run_inputs *in, attn_args *args)
{
    bshd kt;
    int64_t b;
    attn_status st;

    kt = load_new_rows(opt->kn_path, spec, &in->kna, &in->kn, args->batch, "head_dim", spec->head_dim,
                       args->kn_stride);
    if (opt->vn_path != NULL) {
        const bshd vt = load_new_rows(opt->vn_path, spec, &in->vna, &in->vn, args->batch, "head_dim_v",
                                      spec->head_dim_v, args->vn_stride);
        if (vt.len != kt.len)
            fail(opt->vn_path, "seq_new %lld does not match %s's seq_new %lld", (long long)vt.len, opt->kn_path,
                 (long long)kt.len);
    }
    args->k_new = in->kn;
    args->v_new = in->vn;
    args->seq_new = kt.len;
    if (!spec->padding) {
        if (kt.len > args->seq_k)
            fail(opt->kn_path, "%lld new rows do not fit the cache's %lld keys", (long long)kt.len,
                 (long long)args->seq_k);
        in->seqlens = (int32_t *)malloc((size_t)args->batch * sizeof(int32_t) + 1);
        if (in->seqlens == NULL)
            fail(opt->kn_path, "out of memory");
        for (b = 0; b < args->batch; b++)
            in->seqlens[b] = (int32_t)(args->seq_k - kt.len);
        args->seqlens_k = in->seqlens;
    }
    for (b = 0; b < args->batch; b++)
        if (args->seqlens_k[b] + kt.len > args->seq_k)
            fail(opt->s_path, "seqlens_k[%d] = %ld and %lld new rows pass the cache's capacity of %lld keys", (int)b,
                 (long)args->seqlens_k[b], (long long)kt.len, (long long)args->seq_k);
    st = attn_check_append(spec, args);
    if (st != ATTN_OK)
        fail(opt->kn_path, "%s", attn_status_string(st));
}

/* Row x of a new key rotated at position pos as the reference rotates
   (attn_reference_rope): in double, rounded to f32. */
static void rope_new_row(const attn_spec *spec, const attn_args *args, int64_t pos, float *x)
{
    double r[1024]; /* rope_dim <= head_dim <= 1024 (the configs' limit, shared_kv's) */
    int d;
    if (spec->rope_style == ATTN_ROPE_NONE)
        return;
    for (d = 0; d < spec->rope_dim; d++)
        r[d] = (double)x[d];
    attn_reference_rope(spec, args, pos, r, 1);
    for (d = 0; d < spec->rope_dim; d++)
        x[d] = (float)r[d];
}

/* --reference with --k-new: the new rows stored into the cache as the
   kernel stores them (K rotated at its position j = seqlens_k[b] + t, each
   row then converted to the cache's type with attn_f32_to_dtype_array:
   rounded to nearest even, or quantized as ggml does), then the args set
   for attn_reference over seqlens_k[b] + Ln keys. */
static void reference_append(const attn_spec *spec, run_inputs *in, attn_args *args)
{
    const int64_t Ln = args->seq_new, D = spec->head_dim, Dv = spec->head_dim_v;
    const size_t qsz = attn_dtype_size(spec->dtype_q), ksz = attn_dtype_size(spec->dtype_kv);
    float *row = (float *)malloc(sizeof(float) * (size_t)(D > Dv ? D : Dv) + 1);
    int64_t b, t, h;
    int pass;

    in->after = (int32_t *)malloc((size_t)args->batch * sizeof(int32_t) + 1);
    if (row == NULL || in->after == NULL)
        fail(spec->name, "out of memory");
    for (b = 0; b < args->batch; b++)
        for (t = 0; t < Ln; t++)
            for (h = 0; h < spec->heads_kv; h++)
                for (pass = 0; pass < (in->vn != NULL ? 2 : 1); pass++) {
                    const int64_t n = pass ? Dv : D, j = args->seqlens_k[b] + t;
                    const int64_t *ns = pass ? args->vn_stride : args->kn_stride;
                    const int64_t *cs = pass ? args->v_stride : args->k_stride;
                    const unsigned char *src = (const unsigned char *)(pass ? in->vn : in->kn);
                    int64_t at = h * cs[2];
                    if (spec->page > 0)
                        at += args->block_table[b * args->block_table_stride + j / spec->page] * cs[0] +
                              (j % spec->page) * cs[1];
                    else
                        at += b * cs[0] + j * cs[1];
                    attn_dtype_to_f32_array(spec->dtype_q, src + (size_t)(b * ns[0] + t * ns[1] + h * ns[2]) * qsz,
                                            row, (size_t)n);
                    if (!pass)
                        qk_norm_new_row(spec, args, row);
                    if (!pass)
                        rope_new_row(spec, args, j, row);
                    attn_f32_to_dtype_array(spec->dtype_kv, row,
                                            (unsigned char *)(pass ? in->v : in->k) + (size_t)at * ksz, (size_t)n);
                }
    for (b = 0; b < args->batch; b++)
        in->after[b] = args->seqlens_k[b] + (int32_t)Ln;
    args->seqlens_k = in->after;
    args->k_new = args->v_new = NULL;
    args->seq_new = 0;
    free(row);
}

/* --k-out, --v-out: the caches after the call, shaped as --k and --v were
   read: f32, or f16 for an f16 cache; bf16 widened to f32 (exactly); a
   block type (q8_0, q4_0) as raw uint8 blocks when the input was raw
   blocks, else dequantized to f32. */
static void kv_outputs(const run_options *opt, const attn_spec *spec, const run_inputs *in, run_outputs *out)
{
    int t;
    for (t = 0; t < 2; t++) {
        const attn_npy *a = t ? &in->va : &in->ka;
        const void *data = t ? in->v : in->k;
        const int blocks = attn_dtype_values(spec->dtype_kv) > 1;
        attn_npy_dtype npy = spec->dtype_kv == ATTN_DTYPE_F16 ? ATTN_NPY_F16 : ATTN_NPY_F32;
        if (opt->kv_out[t] == NULL)
            continue;
        if (blocks && a->dtype == ATTN_NPY_U8) {
            npy = ATTN_NPY_U8;
        } else if (blocks || spec->dtype_kv == ATTN_DTYPE_BF16) {
            out->kv_wide[t] = widen_copy(opt->kv_out[t], spec->dtype_kv, data, a->count);
            data = out->kv_wide[t];
        }
        add_output(out, spec, t ? "--v-out" : "--k-out", opt->kv_out[t], a->ndim, a->shape, data, npy, 0);
    }
}

static int run_qkv(const attn_kernel *kernel, const run_options *options)
{
    const attn_spec *spec = &kernel->spec;
    const attn_variant *variant = NULL;
    const run_options opt = *options;
    run_inputs in;
    run_outputs out;
    attn_args args;
    int t;

    check_paths(&opt, spec);
    check_bwd_paths(&opt, spec);
    check_append_paths(&opt, spec);
    if (opt.isa_name != NULL && !opt.use_reference)
        variant = pick_isa(kernel, opt.isa_name);

    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    load_qkv(&opt, spec, &in, &args);
    if (opt.s_path != NULL)
        load_seqlens(opt.s_path, spec, &in, &args);
    if (opt.m_path != NULL)
        load_mask(opt.m_path, spec, &in, &args);
    if (opt.sinks_path != NULL)
        load_sinks(opt.sinks_path, spec, &in, &args);
    if (opt.r_path != NULL)
        load_rel(opt.r_path, spec, &in, &args);
    if (opt.rope_path[0] != NULL)
        load_rope(&opt, spec, &in, &args);
    if (opt.qn_path[0] != NULL || opt.qn_path[1] != NULL)
        load_qk_norm(&opt, spec, &in, &args);
    if (opt.kn_path != NULL)
        load_append(&opt, spec, &in, &args);
    {
        static const char *const names[4] = { "-o", "--lse", "--weights", "--entropy" };
        const char *const paths[4] = { opt.o_path, opt.lse_path, opt.p_path, opt.e_path };
        const int64_t call[3] = { args.batch, args.seq_q, args.seq_k };
        alloc_outputs(&out, spec, &opt, ATTN_DIR_FWD, names, paths, 4, 2, call);
        args.o = output_data(&out, "-o");
        args.lse = (float *)output_data(&out, "--lse");
        args.weights = (float *)output_data(&out, "--weights"); /* weights_stride: contiguous */
        args.entropy = (float *)output_data(&out, "--entropy");
    }
    if (spec->family == ATTN_FAMILY_LINEAR && spec->state)
        load_state(&opt, spec, &in, &args, &out);

    if (opt.kn_path != NULL && opt.use_reference)
        reference_append(spec, &in, &args);
    compute(kernel, variant, opt.use_reference, &in, &args);
    if (opt.s_out[0] != NULL) /* the state after the call: S, z */
        for (t = 0; t < 2; t++)
            add_output(&out, spec, "--state-out", opt.s_out[t], 4 - t, out.state_shape[t], out.state[t], ATTN_NPY_F32,
                       1);
    if (opt.kv_out[0] != NULL || opt.kv_out[1] != NULL)
        kv_outputs(&opt, spec, &in, &out);
    if (opt.do_path != NULL)
        run_backward(&opt, spec, &in, &args, &out);
    publish_outputs(&opt, in.qt.ndim == 3, &out);
    free_all(&opt, &in, &out);
    free_qk_norm(&opt, &in);
    return 0;
}

/* run for each family, by attn_family (a new direction, or a family with
   its own args struct, is one more entry) */
static int (*const run_family[ATTN_FAMILY_COUNT])(const attn_kernel *, const run_options *) = {
    [ATTN_FAMILY_SDPA] = run_qkv,
    [ATTN_FAMILY_LINEAR] = run_qkv,
    [ATTN_FAMILY_ADDITIVE] = run_classic,
    [ATTN_FAMILY_LUONG] = run_classic,
};

int main(int argc, char **argv)
{
    const attn_kernel *kernel = attn_entry_kernel;
    run_options opt;

    parse_options(argc, argv, &opt);
    if ((int)kernel->spec.family < 0 || kernel->spec.family >= ATTN_FAMILY_COUNT || !run_family[kernel->spec.family])
        fail("run", "the config '%s' has a kind this tool does not know", kernel->spec.name);
    return run_family[kernel->spec.family](kernel, &opt);
}
