/*
 * attn_npy.h - read and write NumPy .npy files (format versions 1.0-3.0).
 *
 * Not vendored: used by `attngen run` and the tests.  Only C-order,
 * little-endian (or byte-sized) arrays of the dtypes below are supported.
 * Every function that can fail returns 0 or -1 and, on failure, writes a
 * one-line message (no trailing newline) to err (when err is not NULL).
 */
#ifndef ATTN_NPY_H
#define ATTN_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ATTN_NPY_F32,  /* '<f4' */
    ATTN_NPY_F64,  /* '<f8' */
    ATTN_NPY_I32,  /* '<i4' */
    ATTN_NPY_I64,  /* '<i8' */
    ATTN_NPY_BOOL, /* '|b1', one byte per element, nonzero = true */
    ATTN_NPY_U8,   /* '|u1' */
    ATTN_NPY_F16   /* '<f2', IEEE binary16, held as uint16_t bit patterns */
} attn_npy_dtype;

#define ATTN_NPY_MAX_DIMS 8

typedef struct {
    attn_npy_dtype dtype;
    int ndim;                          /* 0..ATTN_NPY_MAX_DIMS */
    int64_t shape[ATTN_NPY_MAX_DIMS];
    void *data;                        /* malloc'ed, never NULL after a read */
    size_t count;                      /* product of shape (1 for 0-D) */
} attn_npy;

/* Reads path into *out (all fields set; free with attn_npy_free). */
int attn_npy_read(const char *path, attn_npy *out, char *err, size_t errlen);

/* f32 data copied, f64 converted (rounding to nearest); other dtypes are an
   error, f16 too: its data stays as read (uint16_t patterns), for the
   caller to convert with the runtime's attn_f16_to_f32_array, so that
   this file needs nothing but libc.  *out is malloc'ed (never NULL on
   success); free() it. */
int attn_npy_to_f32(const attn_npy *a, float **out, char *err, size_t errlen);

/* i32 copied, i64 converted when every value fits; else an error. */
int attn_npy_to_i32(const attn_npy *a, int32_t **out, char *err, size_t errlen);

/* Frees a->data and leaves *a empty; safe on an already freed array. */
void attn_npy_free(attn_npy *a);

/* The dtype's size in bytes and its NumPy name ("float32", ...). */
size_t attn_npy_itemsize(attn_npy_dtype dtype);
const char *attn_npy_dtype_name(attn_npy_dtype dtype);

/*
 * Writes a version 1.0 .npy file atomically: a temp file next to path is
 * written, flushed and renamed over path; on any failure nothing is left
 * behind (path untouched, temp file removed).  A path that exists but is
 * not a regular file (a device, a FIFO, a directory) is an error.
 */
int attn_npy_write(const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen);

/* "(1, 7, 8, 64)", "(3,)", "()" as Python prints a shape; returns buf. */
const char *attn_npy_shape_string(const attn_npy *a, char *buf, size_t len);

/* x cut to f32 rounding to odd: toward zero, with the lowest bit set when
   the cut dropped anything (NaN and values f32 holds exactly unchanged).
   Rounding that to nearest even at 22 or fewer significant bits gives the
   same as rounding x itself there (Boldo and Melquiond's round-to-odd). */
float attn_npy_f64_to_f32_odd(double x);

/*
 * A storage type to convert float arrays into (the runtime's f32, bf16 or
 * f16; this file needs nothing but libc): its element size, whether it is
 * narrower than f32, whether it is IEEE f16 (f16 data is then copied), the
 * store of an f32 value as element i (one rounding to nearest even), and
 * the exact widening of an f16 bit pattern.
 */
typedef struct {
    size_t size;
    int narrow, is_f16;
    void (*store)(float x, void *base, size_t i);
    float (*from_f16)(uint16_t h);
} attn_npy_storage;

/* A float16, float32 or float64 array converted to a storage type as a C
   caller would have stored its values: f16 exact then one rounding, f32 one
   rounding, f64 to f32 as C converts it, or to a narrow type through
   attn_npy_f64_to_f32_odd (one rounding in all).  *out is malloc'ed (at
   least 1 byte); free() it. */
int attn_npy_to_stored(const attn_npy *a, const attn_npy_storage *to, void **out, char *err, size_t errlen);

/* attn_npy_write to "<path>.tmp.<pid>", next to path, for a caller that
   publishes several outputs together (rename each once all are written);
   returns that name (malloc'ed) or NULL with err set. */
char *attn_npy_write_staged(const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                            const void *data, char *err, size_t errlen);

/*
 * Several outputs published together: each written next to its path
 * (attn_npy_write_staged), then all renamed into place, so that every output
 * is complete before any replaces what was there.  Zero the set before the
 * first stage.
 */
#define ATTN_NPY_MAX_STAGED 16
typedef struct {
    const char *path[ATTN_NPY_MAX_STAGED];
    char *staged[ATTN_NPY_MAX_STAGED];
    int n;
} attn_npy_staged;

/* Writes one output next to path (nothing where path is NULL); on failure
   every file staged so far is removed. */
int attn_npy_stage(attn_npy_staged *sf, const char *path, attn_npy_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen);
/* Renames the staged files over their paths, in order; on failure *failed
   names the path that could not be replaced and the files not yet renamed
   are removed.  The set is empty afterwards either way. */
int attn_npy_publish(attn_npy_staged *sf, const char **failed, char *err, size_t errlen);
/* Removes the staged files from the from'th on and empties the set. */
void attn_npy_unstage(attn_npy_staged *sf, int from);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_NPY_H */
