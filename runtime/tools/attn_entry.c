/*
 * attn_entry.c - names the kernel a tool (attn_run, attn_check, attn_bench)
 * is built around.
 *
 * The tools reach their kernel through attn_entry_kernel; this file defines
 * it as the address of the generated descriptor that ATTN_ENTRY_KERNEL
 * names.  Compile it once per kernel:
 *
 *   cc -c runtime/tools/attn_entry.c -Iruntime -DATTN_ENTRY_KERNEL=attn_<name>_kernel
 *
 * and link it with the kernel, the runtime and a tool's main.  Not vendored.
 */
#include "attn_runtime.h"

#ifndef ATTN_ENTRY_KERNEL
#error "define ATTN_ENTRY_KERNEL as the kernel descriptor, e.g. -DATTN_ENTRY_KERNEL=attn_llama3_8b_kernel"
#endif

extern const attn_kernel ATTN_ENTRY_KERNEL;
extern const attn_kernel *const attn_entry_kernel;
const attn_kernel *const attn_entry_kernel = &ATTN_ENTRY_KERNEL;

/* The backward pass of kernels with backward = true: -DATTN_ENTRY_BWD_KERNEL=attn_<name>_bwd_kernel. */
extern const attn_bwd_kernel *const attn_entry_bwd_kernel;
#ifdef ATTN_ENTRY_BWD_KERNEL
extern const attn_bwd_kernel ATTN_ENTRY_BWD_KERNEL;
const attn_bwd_kernel *const attn_entry_bwd_kernel = &ATTN_ENTRY_BWD_KERNEL;
#else
const attn_bwd_kernel *const attn_entry_bwd_kernel = 0;
#endif

/* The store of new K / V rows alone, of sdpa kernels (the bench's --append):
   -DATTN_ENTRY_APPEND=attn_<name>_append; NULL without it. */
extern attn_status (*const attn_entry_append)(const attn_args *);
#ifdef ATTN_ENTRY_APPEND
extern attn_status ATTN_ENTRY_APPEND(const attn_args *);
attn_status (*const attn_entry_append)(const attn_args *) = ATTN_ENTRY_APPEND;
#else
attn_status (*const attn_entry_append)(const attn_args *) = 0;
#endif
