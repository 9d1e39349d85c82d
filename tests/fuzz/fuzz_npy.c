/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (runtime/attn_npy.c).
 *
 * Each input is written to a file and read with attn_npy_read, the way
 * `attngen run` reads its inputs.  Besides "no crash, no out-of-bounds
 * access, no undefined behaviour, no leak" (ASan, UBSan, LSan), it checks:
 *   - a failed read leaves *out empty and says why in one line;
 *   - a successful read returns a consistent array: 0..8 dims, count equal
 *     to the product of the shape, the data exactly the file's last
 *     count * itemsize bytes, every byte readable;
 *   - the conversions (attn_npy_to_f32 / attn_npy_to_i32) accept exactly
 *     the dtypes they document, and copy or convert every element;
 *   - writing the array with attn_npy_write and reading it back gives the
 *     same dtype, shape and bytes.
 *
 * Build (see the Makefile's fuzz rules):
 *   clang -fsanitize=fuzzer,address,undefined -Iruntime tests/fuzz/fuzz_npy.c runtime/attn_npy.c
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, open, write */

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Round trips are skipped above this many data bytes (they cost a write). */
#define ROUND_TRIP_MAX ((size_t)1 << 16)

static char dir[64], in_path[96], out_path[96];

static void cleanup(void)
{
    remove(in_path);
    remove(out_path);
    rmdir(dir);
}

#ifdef __GNUC__
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void die(const char *fmt, ...);

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("fuzz_npy: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort(); /* libFuzzer saves the input as a crash artifact */
}

/* A private directory for the input and output: under $TMPDIR when set,
   else in memory (/dev/shm) when there is one, else under /tmp. */
static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    struct stat st;
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 40)
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                  ? "/dev/shm"
                  : "/tmp";
    snprintf(dir, sizeof dir, "%s/fuzz_npy.XXXXXX", tmp);
    if (mkdtemp(dir) == NULL)
        die("cannot create a directory under %s", tmp);
    snprintf(in_path, sizeof in_path, "%s/in.npy", dir);
    snprintf(out_path, sizeof out_path, "%s/out.npy", dir);
    atexit(cleanup);
}

static void write_file(const uint8_t *data, size_t size)
{
    size_t done = 0;
    const int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("cannot create %s", in_path);
    while (done < size) {
        const ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            die("cannot write %s", in_path);
        done += (size_t)n;
    }
    if (close(fd) != 0)
        die("cannot close %s", in_path);
}

static void check_message(const char *err, size_t errlen, const char *what)
{
    const size_t n = strnlen(err, errlen);
    if (n == 0 || n == errlen)
        die("%s: the message is empty or not terminated", what);
    if (memchr(err, '\n', n) != NULL)
        die("%s: the message spans lines: %s", what, err);
}

static int is_empty(const attn_npy *a)
{
    static const attn_npy zero;
    return memcmp(a, &zero, sizeof zero) == 0;
}

/* Both conversions: right dtypes accepted, others refused, every element. */
static void check_conversions(const attn_npy *a)
{
    char err[256];
    float *f = NULL;
    int32_t *i = NULL;
    const int is_float = a->dtype == ATTN_NPY_F32 || a->dtype == ATTN_NPY_F64;
    const int is_int = a->dtype == ATTN_NPY_I32 || a->dtype == ATTN_NPY_I64;
    size_t n;

    err[0] = '\0';
    if (attn_npy_to_f32(a, &f, err, sizeof err) == 0) {
        if (!is_float)
            die("attn_npy_to_f32 accepted %s", attn_npy_dtype_name(a->dtype));
        for (n = 0; n < a->count; n++) {
            float want;
            if (a->dtype == ATTN_NPY_F32)
                memcpy(&want, (const char *)a->data + 4 * n, 4);
            else {
                double d;
                memcpy(&d, (const char *)a->data + 8 * n, 8);
                want = (float)d;
            }
            if (memcmp(&f[n], &want, sizeof want) != 0 && !(isnan(f[n]) && isnan(want)))
                die("attn_npy_to_f32: element %zu differs", n);
        }
        free(f);
    } else {
        if (is_float)
            die("attn_npy_to_f32 refused %s: %s", attn_npy_dtype_name(a->dtype), err);
        check_message(err, sizeof err, "attn_npy_to_f32");
    }

    err[0] = '\0';
    if (attn_npy_to_i32(a, &i, err, sizeof err) == 0) {
        if (!is_int)
            die("attn_npy_to_i32 accepted %s", attn_npy_dtype_name(a->dtype));
        for (n = 0; n < a->count; n++) {
            int64_t want;
            if (a->dtype == ATTN_NPY_I32) {
                int32_t w;
                memcpy(&w, (const char *)a->data + 4 * n, 4);
                want = w;
            } else {
                memcpy(&want, (const char *)a->data + 8 * n, 8);
            }
            if (i[n] != want)
                die("attn_npy_to_i32: element %zu is %ld, expected %lld", n, (long)i[n],
                    (long long)want);
        }
        free(i);
    } else {
        check_message(err, sizeof err, "attn_npy_to_i32");
        if (a->dtype == ATTN_NPY_I32)
            die("attn_npy_to_i32 refused int32: %s", err);
        if (a->dtype == ATTN_NPY_I64) {
            /* only when some value does not fit */
            int64_t v;
            int fits = 1;
            for (n = 0; n < a->count && fits; n++) {
                memcpy(&v, (const char *)a->data + 8 * n, 8);
                fits = v >= INT32_MIN && v <= INT32_MAX;
            }
            if (fits)
                die("attn_npy_to_i32 refused int64 values that fit: %s", err);
        }
    }
}

static void check_round_trip(const attn_npy *a)
{
    char err[256];
    attn_npy b;

    if (attn_npy_write(out_path, a->dtype, a->ndim, a->shape, a->data, err, sizeof err) != 0)
        die("attn_npy_write failed on an array just read: %s", err);
    if (attn_npy_read(out_path, &b, err, sizeof err) != 0)
        die("cannot read back what attn_npy_write wrote: %s", err);
    if (b.dtype != a->dtype || b.ndim != a->ndim || b.count != a->count ||
        memcmp(b.shape, a->shape, sizeof a->shape) != 0)
        die("round trip changed the dtype or the shape");
    if (a->count > 0 &&
        memcmp(a->data, b.data, a->count * attn_npy_itemsize(a->dtype)) != 0)
        die("round trip changed the data");
    attn_npy_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    attn_npy a;
    size_t count = 1, bytes, n;
    unsigned sum = 0;
    int d;

    if (dir[0] == '\0')
        setup();
    write_file(data, size);
    memset(&a, 0x5a, sizeof a); /* the reader must set every field */
    err[0] = '\0';
    if (attn_npy_read(in_path, &a, err, sizeof err) != 0) {
        check_message(err, sizeof err, "attn_npy_read");
        if (!is_empty(&a))
            die("a failed read left *out set: %s", err);
        return 0;
    }

    if (a.data == NULL || a.ndim < 0 || a.ndim > ATTN_NPY_MAX_DIMS ||
        attn_npy_itemsize(a.dtype) == 0)
        die("inconsistent array: data %p, ndim %d, dtype %d", a.data, a.ndim, (int)a.dtype);
    for (d = 0; d < a.ndim; d++) {
        if (a.shape[d] < 0)
            die("negative dimension %lld", (long long)a.shape[d]);
        count *= (size_t)a.shape[d]; /* the file holds them all: no overflow */
    }
    if (count != a.count)
        die("count %zu is not the product of the shape (%zu)", a.count, count);
    bytes = count * attn_npy_itemsize(a.dtype);
    if (bytes > size || bytes + 10 > size)
        die("%zu data bytes from a %zu byte file", bytes, size);
    if (bytes > 0 && memcmp(a.data, data + size - bytes, bytes) != 0)
        die("the data is not the file's last %zu bytes", bytes);
    for (n = 0; n < bytes; n++) /* every byte readable (ASan) */
        sum += ((const unsigned char *)a.data)[n];
    (void)sum;

    check_conversions(&a);
    if (bytes <= ROUND_TRIP_MAX)
        check_round_trip(&a);
    attn_npy_free(&a);
    if (!is_empty(&a))
        die("attn_npy_free left the array set");
    attn_npy_free(&a); /* safe twice */
    return 0;
}
