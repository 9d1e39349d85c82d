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

#ifdef __cplusplus
}
#endif

#endif /* ATTN_NPY_H */
