/*
 * attn_npy.c - NumPy .npy reading and writing for attngen's tools.
 *
 * The reader treats the file as untrusted: every length is bounded, every
 * size product is overflow-checked, the header is parsed from a
 * (pointer, end) pair without relying on NUL termination, and the data is
 * read in growing chunks so a short file never causes a huge allocation.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fdopen, open, getpid, stat */
#endif

#include "attn_npy.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Longest header we accept (numpy itself refuses more than 10000 bytes
   unless told otherwise). */
#define NPY_MAX_HEADER 65536u
/* Largest string value in the header we care about ('<f4' etc.). */
#define NPY_MAX_STR 64
/* First chunk of data read; it doubles up to the expected size. */
#define NPY_CHUNK ((size_t)1 << 20)

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

#ifdef __GNUC__
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

size_t attn_npy_itemsize(attn_npy_dtype dtype)
{
    switch (dtype) {
    case ATTN_NPY_F32: return 4;
    case ATTN_NPY_F64: return 8;
    case ATTN_NPY_I32: return 4;
    case ATTN_NPY_I64: return 8;
    case ATTN_NPY_BOOL: return 1;
    case ATTN_NPY_U8: return 1;
    case ATTN_NPY_F16: return 2;
    }
    return 0;
}

const char *attn_npy_dtype_name(attn_npy_dtype dtype)
{
    switch (dtype) {
    case ATTN_NPY_F32: return "float32";
    case ATTN_NPY_F64: return "float64";
    case ATTN_NPY_I32: return "int32";
    case ATTN_NPY_I64: return "int64";
    case ATTN_NPY_BOOL: return "bool";
    case ATTN_NPY_U8: return "uint8";
    case ATTN_NPY_F16: return "float16";
    }
    return "unknown";
}

static const char *dtype_descr(attn_npy_dtype dtype)
{
    switch (dtype) {
    case ATTN_NPY_F32: return "<f4";
    case ATTN_NPY_F64: return "<f8";
    case ATTN_NPY_I32: return "<i4";
    case ATTN_NPY_I64: return "<i8";
    case ATTN_NPY_BOOL: return "|b1";
    case ATTN_NPY_U8: return "|u1";
    case ATTN_NPY_F16: return "<f2";
    }
    return NULL;
}

/* descr string -> dtype; byte-sized types take any byte-order char. */
static int descr_to_dtype(const char *d, attn_npy_dtype *out)
{
    static const struct { const char *code; attn_npy_dtype dtype; int one_byte; } known[] = {
        {"f4", ATTN_NPY_F32, 0}, {"f8", ATTN_NPY_F64, 0}, {"i4", ATTN_NPY_I32, 0},
        {"i8", ATTN_NPY_I64, 0}, {"b1", ATTN_NPY_BOOL, 1}, {"u1", ATTN_NPY_U8, 1},
        {"f2", ATTN_NPY_F16, 0},
    };
    size_t i;
    if (strlen(d) != 3)
        return -1;
    for (i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(d + 1, known[i].code) != 0)
            continue;
        if (d[0] == '<' || (known[i].one_byte && (d[0] == '|' || d[0] == '>'))) {
            *out = known[i].dtype;
            return 0;
        }
    }
    return -1;
}

/* ---- header parsing ----------------------------------------------------- */

typedef struct {
    const char *p, *end;
    char *err;
    size_t errlen;
} hparser;

static void skip_ws(hparser *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static int at(const hparser *h, char c)
{
    return h->p < h->end && *h->p == c;
}

static int fail(hparser *h, const char *what)
{
    set_err(h->err, h->errlen, "header is malformed: %s", what);
    return -1;
}

/* A quoted string without escapes, printable ASCII only. */
static int parse_string(hparser *h, char *buf, size_t buflen)
{
    char quote;
    size_t n = 0;
    if (!at(h, '\'') && !at(h, '"'))
        return fail(h, "expected a quoted string");
    quote = *h->p++;
    while (h->p < h->end && *h->p != quote) {
        const unsigned char c = (unsigned char)*h->p;
        if (c < 0x20 || c > 0x7e || c == '\\')
            return fail(h, "unexpected character in a string");
        if (n + 1 >= buflen)
            return fail(h, "string too long");
        buf[n++] = (char)c;
        h->p++;
    }
    if (h->p >= h->end)
        return fail(h, "unterminated string");
    h->p++; /* closing quote */
    buf[n] = '\0';
    return 0;
}

static int match_word(hparser *h, const char *word)
{
    const size_t n = strlen(word);
    if ((size_t)(h->end - h->p) < n || memcmp(h->p, word, n) != 0)
        return 0;
    h->p += n;
    return 1;
}

static int parse_bool(hparser *h, int *value)
{
    if (match_word(h, "True"))
        *value = 1;
    else if (match_word(h, "False"))
        *value = 0;
    else
        return fail(h, "fortran_order must be True or False");
    return 0;
}

/* A non-negative decimal integer (a Python 2 'L' suffix is accepted). */
static int parse_dim(hparser *h, int64_t *value)
{
    int64_t v = 0;
    int digits = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        const int digit = *h->p - '0';
        if (v > (INT64_MAX - digit) / 10)
            return fail(h, "a shape dimension is too large");
        v = v * 10 + digit;
        digits++;
        h->p++;
    }
    if (digits == 0)
        return fail(h, "shape must be a tuple of non-negative integers");
    if (at(h, 'L'))
        h->p++;
    *value = v;
    return 0;
}

/* "()", "(3,)", "(2, 3, 4)", "(2, 3, 4,)" */
static int parse_shape(hparser *h, int *ndim, int64_t *shape)
{
    int n = 0, comma_after_last = 0;
    if (!at(h, '('))
        return fail(h, "shape must be a tuple");
    h->p++;
    skip_ws(h);
    while (!at(h, ')')) {
        if (n == ATTN_NPY_MAX_DIMS) {
            set_err(h->err, h->errlen, "too many dimensions (at most %d are supported)",
                    ATTN_NPY_MAX_DIMS);
            return -1;
        }
        if (parse_dim(h, &shape[n]) != 0)
            return -1;
        n++;
        skip_ws(h);
        comma_after_last = 0;
        if (at(h, ',')) {
            h->p++;
            comma_after_last = 1;
            skip_ws(h);
        } else if (!at(h, ')')) {
            return fail(h, "expected ',' or ')' in shape");
        }
    }
    h->p++; /* ')' */
    if (n == 1 && !comma_after_last)
        return fail(h, "shape (n) is not a tuple; write (n,)");
    *ndim = n;
    return 0;
}

typedef struct {
    char descr[NPY_MAX_STR];
    int fortran_order;
    int ndim;
    int64_t shape[ATTN_NPY_MAX_DIMS];
} npy_header;

/* {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } */
static int parse_header(const char *text, size_t len, npy_header *hd, char *err, size_t errlen)
{
    hparser h;
    int have_descr = 0, have_order = 0, have_shape = 0;
    char key[NPY_MAX_STR];

    h.p = text;
    h.end = text + len;
    h.err = err;
    h.errlen = errlen;

    skip_ws(&h);
    if (!at(&h, '{'))
        return fail(&h, "expected '{'");
    h.p++;
    for (;;) {
        skip_ws(&h);
        if (at(&h, '}'))
            break;
        if (parse_string(&h, key, sizeof key) != 0)
            return -1;
        skip_ws(&h);
        if (!at(&h, ':'))
            return fail(&h, "expected ':' after a key");
        h.p++;
        skip_ws(&h);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (!at(&h, '\'') && !at(&h, '"')) {
                set_err(err, errlen, "unsupported dtype (structured dtypes are not supported)");
                return -1;
            }
            if (parse_string(&h, hd->descr, sizeof hd->descr) != 0)
                return -1;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (parse_bool(&h, &hd->fortran_order) != 0)
                return -1;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (parse_shape(&h, &hd->ndim, hd->shape) != 0)
                return -1;
            have_shape = 1;
        } else if (strcmp(key, "descr") == 0 || strcmp(key, "fortran_order") == 0 ||
                   strcmp(key, "shape") == 0) {
            set_err(err, errlen, "header is malformed: duplicate key '%s'", key);
            return -1;
        } else {
            set_err(err, errlen, "header is malformed: unknown key '%s'", key);
            return -1;
        }
        skip_ws(&h);
        if (at(&h, ',')) {
            h.p++;
            continue;
        }
        if (!at(&h, '}'))
            return fail(&h, "expected ',' or '}'");
    }
    h.p++; /* '}' */
    skip_ws(&h);
    if (h.p != h.end)
        return fail(&h, "unexpected text after the dict");
    if (!have_descr)
        return fail(&h, "missing key 'descr'");
    if (!have_order)
        return fail(&h, "missing key 'fortran_order'");
    if (!have_shape)
        return fail(&h, "missing key 'shape'");
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

/* Reads up to n bytes; returns how many were read. */
static size_t read_some(FILE *f, void *buf, size_t n)
{
    return n == 0 ? 0 : fread(buf, 1, n, f);
}

/* Reads exactly `bytes` of data into a fresh buffer (at least 1 byte). */
static int read_data(FILE *f, size_t bytes, void **out, char *err, size_t errlen)
{
    size_t cap = bytes < NPY_CHUNK ? bytes : NPY_CHUNK, got = 0;
    unsigned char *buf = (unsigned char *)malloc(cap > 0 ? cap : 1);

    if (buf == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    while (got < bytes) {
        size_t n;
        if (got == cap) {
            size_t new_cap = cap > bytes / 2 ? bytes : cap * 2;
            unsigned char *grown = (unsigned char *)realloc(buf, new_cap);
            if (grown == NULL) {
                free(buf);
                set_err(err, errlen, "out of memory (%zu data bytes)", bytes);
                return -1;
            }
            buf = grown;
            cap = new_cap;
        }
        n = read_some(f, buf + got, cap - got);
        got += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        set_err(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    if (got < bytes) {
        free(buf);
        set_err(err, errlen, "truncated: expected %zu data bytes, found %zu", bytes, got);
        return -1;
    }
    *out = buf;
    return 0;
}

static int read_header(FILE *f, npy_header *hd, char *err, size_t errlen)
{
    unsigned char pre[8], lenbuf[4];
    size_t hlen, lenbytes, n;
    char *text;
    int rc;

    n = read_some(f, pre, sizeof pre);
    if (n < sizeof npy_magic || memcmp(pre, npy_magic, sizeof npy_magic) != 0) {
        set_err(err, errlen, "not a .npy file (bad magic)");
        return -1;
    }
    if (n < sizeof pre) {
        set_err(err, errlen, "truncated: the header is incomplete");
        return -1;
    }
    if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0) {
        set_err(err, errlen, "unsupported .npy format version %d.%d (expected 1.0, 2.0 or 3.0)",
                pre[6], pre[7]);
        return -1;
    }
    lenbytes = pre[6] == 1 ? 2 : 4; /* little-endian uint16 or uint32 */
    if (read_some(f, lenbuf, lenbytes) != lenbytes) {
        set_err(err, errlen, "truncated: the header is incomplete");
        return -1;
    }
    hlen = (size_t)lenbuf[0] | (size_t)lenbuf[1] << 8;
    if (lenbytes == 4)
        hlen |= (size_t)lenbuf[2] << 16 | (size_t)lenbuf[3] << 24;
    if (hlen > NPY_MAX_HEADER) {
        set_err(err, errlen, "header is too long (%zu bytes, at most %u)", hlen, NPY_MAX_HEADER);
        return -1;
    }
    text = (char *)malloc(hlen > 0 ? hlen : 1);
    if (text == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (read_some(f, text, hlen) != hlen) {
        free(text);
        set_err(err, errlen, "truncated: the header is incomplete");
        return -1;
    }
    rc = parse_header(text, hlen, hd, err, errlen);
    free(text);
    return rc;
}

int attn_npy_read(const char *path, attn_npy *out, char *err, size_t errlen)
{
    npy_header hd;
    attn_npy a;
    size_t count = 1, bytes, itemsize;
    FILE *f;
    int d;

    if (out == NULL || path == NULL) {
        set_err(err, errlen, "internal error: NULL argument");
        return -1;
    }
    memset(out, 0, sizeof *out);
    memset(&hd, 0, sizeof hd);
    memset(&a, 0, sizeof a);

    f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (read_header(f, &hd, err, errlen) != 0)
        goto fail;
    if (descr_to_dtype(hd.descr, &a.dtype) != 0) {
        set_err(err, errlen, "unsupported dtype '%s' (expected f2, f4, f8, i4, i8, b1, u1)",
                hd.descr);
        goto fail;
    }
    /* For 0-D and 1-D arrays Fortran and C order are the same thing. */
    if (hd.fortran_order && hd.ndim > 1) {
        set_err(err, errlen, "Fortran-order arrays are not supported");
        goto fail;
    }
    itemsize = attn_npy_itemsize(a.dtype);
    for (d = 0; d < hd.ndim; d++) {
        if ((uint64_t)hd.shape[d] > (uint64_t)SIZE_MAX ||
            (hd.shape[d] != 0 && count > SIZE_MAX / (size_t)hd.shape[d])) {
            set_err(err, errlen, "array is too large");
            goto fail;
        }
        count *= (size_t)hd.shape[d];
    }
    if (count > (SIZE_MAX / 2) / itemsize) {
        set_err(err, errlen, "array is too large");
        goto fail;
    }
    bytes = count * itemsize;
    if (read_data(f, bytes, &a.data, err, errlen) != 0)
        goto fail;
    if (fgetc(f) != EOF) {
        free(a.data);
        set_err(err, errlen, "trailing data after the array");
        goto fail;
    }
    fclose(f);
    a.ndim = hd.ndim;
    memcpy(a.shape, hd.shape, sizeof a.shape);
    a.count = count;
    *out = a;
    return 0;
fail:
    fclose(f);
    return -1;
}

void attn_npy_free(attn_npy *a)
{
    if (a == NULL)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

int attn_npy_to_f32(const attn_npy *a, float **out, char *err, size_t errlen)
{
    float *buf;
    size_t i;

    if (a->dtype != ATTN_NPY_F32 && a->dtype != ATTN_NPY_F64) {
        set_err(err, errlen, "expected float32 or float64 data, got %s",
                attn_npy_dtype_name(a->dtype));
        return -1;
    }
    buf = (float *)malloc(a->count > 0 ? a->count * sizeof *buf : 1);
    if (buf == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (a->dtype == ATTN_NPY_F32) {
        if (a->count > 0)
            memcpy(buf, a->data, a->count * sizeof *buf);
    } else {
        const double *src = (const double *)a->data;
        /* IEEE conversion (C99 Annex F): out-of-range values become +-inf */
        for (i = 0; i < a->count; i++)
            buf[i] = (float)src[i];
    }
    *out = buf;
    return 0;
}

int attn_npy_to_i32(const attn_npy *a, int32_t **out, char *err, size_t errlen)
{
    int32_t *buf;
    size_t i;

    if (a->dtype != ATTN_NPY_I32 && a->dtype != ATTN_NPY_I64) {
        set_err(err, errlen, "expected int32 or int64 data, got %s",
                attn_npy_dtype_name(a->dtype));
        return -1;
    }
    buf = (int32_t *)malloc(a->count > 0 ? a->count * sizeof *buf : 1);
    if (buf == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (a->dtype == ATTN_NPY_I32) {
        if (a->count > 0)
            memcpy(buf, a->data, a->count * sizeof *buf);
    } else {
        const int64_t *src = (const int64_t *)a->data;
        for (i = 0; i < a->count; i++) {
            if (src[i] < INT32_MIN || src[i] > INT32_MAX) {
                set_err(err, errlen, "value %lld at index %zu does not fit in int32",
                        (long long)src[i], i);
                free(buf);
                return -1;
            }
            buf[i] = (int32_t)src[i];
        }
    }
    *out = buf;
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

static unsigned next_tmp_counter(void)
{
    static unsigned counter;
#ifdef __GNUC__
    return __atomic_fetch_add(&counter, 1u, __ATOMIC_RELAXED);
#else
    return counter++;
#endif
}

/* Builds the full 1.0 preamble (magic .. '\n'); returns its length or 0. */
static size_t build_preamble(char *buf, size_t buflen, attn_npy_dtype dtype, int ndim,
                             const int64_t *shape)
{
    char dims[ATTN_NPY_MAX_DIMS * 24 + 8];
    size_t pos = 0, dict_len, total;
    int d, n;

    dims[0] = '\0';
    for (d = 0; d < ndim; d++) {
        n = snprintf(dims + pos, sizeof dims - pos, d == 0 ? "%lld" : ", %lld",
                     (long long)shape[d]);
        if (n < 0 || (size_t)n >= sizeof dims - pos)
            return 0;
        pos += (size_t)n;
    }
    if (ndim == 1 && pos + 1 < sizeof dims) {
        dims[pos++] = ','; /* (3,) */
        dims[pos] = '\0';
    }
    n = snprintf(buf + 10, buflen - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                 dtype_descr(dtype), dims);
    if (n < 0 || (size_t)n >= buflen - 10)
        return 0;
    dict_len = (size_t)n;
    /* pad with spaces and a final '\n' to a multiple of 64, as numpy does */
    total = 10 + dict_len + 1;
    total = (total + 63) / 64 * 64;
    if (total > buflen || total - 10 > 65535)
        return 0;
    memset(buf + 10 + dict_len, ' ', total - 10 - dict_len - 1);
    buf[total - 1] = '\n';
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((total - 10) & 0xff);
    buf[9] = (char)((total - 10) >> 8);
    return total;
}

int attn_npy_write(const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen)
{
    char preamble[512];
    char *tmp;
    size_t pre_len, count = 1, itemsize, plen;
    FILE *f = NULL;
    int d, fd = -1, attempt;

    itemsize = attn_npy_itemsize(dtype);
    if (path == NULL || itemsize == 0 || ndim < 0 || ndim > ATTN_NPY_MAX_DIMS ||
        (ndim > 0 && shape == NULL)) {
        set_err(err, errlen, "internal error: bad arguments to attn_npy_write");
        return -1;
    }
    for (d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (uint64_t)shape[d] > (uint64_t)SIZE_MAX ||
            (shape[d] != 0 && count > SIZE_MAX / (size_t)shape[d])) {
            set_err(err, errlen, "internal error: bad shape for attn_npy_write");
            return -1;
        }
        count *= (size_t)shape[d];
    }
    if (count > SIZE_MAX / itemsize || (count > 0 && data == NULL)) {
        set_err(err, errlen, "internal error: bad data for attn_npy_write");
        return -1;
    }
    pre_len = build_preamble(preamble, sizeof preamble, dtype, ndim, shape);
    if (pre_len == 0) {
        set_err(err, errlen, "internal error: header does not fit");
        return -1;
    }

    /* rename() would replace a device, FIFO or directory entry: refuse */
    {
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            set_err(err, errlen, "exists and is not a regular file; not replacing it");
            return -1;
        }
    }

    /* path + ".tmp.<pid>.<counter>", created exclusively */
    plen = strlen(path);
    tmp = (char *)malloc(plen + 64);
    if (tmp == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(tmp, plen + 64, "%s.tmp.%ld.%u", path, (long)getpid(), next_tmp_counter());
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        set_err(err, errlen, "cannot create a temporary file next to it: %s", strerror(errno));
        free(tmp);
        return -1;
    }
    f = fdopen(fd, "wb");
    if (f == NULL) {
        set_err(err, errlen, "cannot open the temporary file: %s", strerror(errno));
        close(fd);
        goto fail;
    }
    if (fwrite(preamble, 1, pre_len, f) != pre_len ||
        (count > 0 && fwrite(data, itemsize, count, f) != count) || fflush(f) != 0) {
        set_err(err, errlen, "write failed: %s", strerror(errno));
        fclose(f);
        goto fail;
    }
    if (fclose(f) != 0) {
        set_err(err, errlen, "write failed: %s", strerror(errno));
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        set_err(err, errlen, "cannot rename the temporary file over it: %s", strerror(errno));
        goto fail;
    }
    free(tmp);
    return 0;
fail:
    remove(tmp);
    free(tmp);
    return -1;
}

/* ---- helpers of the tools ------------------------------------------------ */

const char *attn_npy_shape_string(const attn_npy *a, char *buf, size_t len)
{
    size_t pos = 0;
    int d;
    pos += (size_t)snprintf(buf, len, "(");
    for (d = 0; d < a->ndim && pos < len; d++)
        pos += (size_t)snprintf(buf + pos, len - pos, d == 0 ? "%lld" : ", %lld", (long long)a->shape[d]);
    if (pos < len)
        snprintf(buf + pos, len - pos, a->ndim == 1 ? ",)" : ")");
    return buf;
}

float attn_npy_f64_to_f32_odd(double x)
{
    float f = (float)x;
    uint32_t u;
    if (isnan(x) || (double)f == x)
        return f;
    memcpy(&u, &f, sizeof u);
    if (fabs((double)f) > fabs(x))
        u -= 1; /* rounded away from zero (up to inf): one step back */
    u |= 1;
    memcpy(&f, &u, sizeof f);
    return f;
}

int attn_npy_to_stored(const attn_npy *a, const attn_npy_storage *to, void **out, char *err, size_t errlen)
{
    unsigned char *dst;
    size_t i;

    *out = NULL;
    if (a->dtype != ATTN_NPY_F16 && a->dtype != ATTN_NPY_F32 && a->dtype != ATTN_NPY_F64) {
        set_err(err, errlen, "expected float16, float32 or float64 data, got %s", attn_npy_dtype_name(a->dtype));
        return -1;
    }
    if (to->size == 0 || a->count > (SIZE_MAX - 1) / to->size) {
        set_err(err, errlen, "the array is too large");
        return -1;
    }
    dst = (unsigned char *)malloc(a->count * to->size + 1);
    if (dst == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (a->dtype == ATTN_NPY_F16 && to->is_f16) {
        if (a->count > 0)
            memcpy(dst, a->data, a->count * to->size);
    } else if (a->dtype == ATTN_NPY_F16) {
        const uint16_t *src = (const uint16_t *)a->data;
        for (i = 0; i < a->count; i++) /* exact, then one rounding (bf16) */
            to->store(to->from_f16(src[i]), dst, i);
    } else if (a->dtype == ATTN_NPY_F32) {
        const float *src = (const float *)a->data;
        for (i = 0; i < a->count; i++)
            to->store(src[i], dst, i);
    } else {
        const double *src = (const double *)a->data;
        for (i = 0; i < a->count; i++)
            to->store(to->narrow ? attn_npy_f64_to_f32_odd(src[i]) : (float)src[i], dst, i);
    }
    *out = dst;
    return 0;
}

char *attn_npy_write_staged(const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                            const void *data, char *err, size_t errlen)
{
    const size_t len = strlen(path) + 32;
    char *staged = (char *)malloc(len);
    if (staged == NULL) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(staged, len, "%s.tmp.%ld", path, (long)getpid());
    if (attn_npy_write(staged, dtype, ndim, shape, data, err, errlen) != 0) {
        free(staged);
        return NULL;
    }
    return staged;
}

int attn_npy_stage(attn_npy_staged *sf, const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen)
{
    if (path == NULL)
        return 0;
    if (sf->n >= ATTN_NPY_MAX_STAGED) {
        set_err(err, errlen, "too many outputs");
        attn_npy_unstage(sf, 0);
        return -1;
    }
    sf->path[sf->n] = path;
    sf->staged[sf->n] = attn_npy_write_staged(path, dtype, ndim, shape, data, err, errlen);
    sf->n++;
    if (sf->staged[sf->n - 1] != NULL)
        return 0;
    attn_npy_unstage(sf, 0);
    return -1;
}

int attn_npy_publish(attn_npy_staged *sf, const char **failed, char *err, size_t errlen)
{
    int t;
    for (t = 0; t < sf->n; t++)
        if (rename(sf->staged[t], sf->path[t]) != 0) {
            set_err(err, errlen, "cannot rename the finished file over it: %s", strerror(errno));
            *failed = sf->path[t];
            attn_npy_unstage(sf, t);
            return -1;
        }
    attn_npy_unstage(sf, sf->n);
    return 0;
}

void attn_npy_unstage(attn_npy_staged *sf, int from)
{
    int t;
    for (t = 0; t < sf->n; t++) {
        if (t >= from && sf->staged[t] != NULL)
            remove(sf->staged[t]);
        free(sf->staged[t]);
        sf->staged[t] = NULL;
    }
    sf->n = 0;
}
