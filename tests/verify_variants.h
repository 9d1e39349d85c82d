/*
 * verify_variants.h - for the kernel tests: the variants of a kernel this
 * CPU runs, and a case checked on all of them against one reference
 * (attn_verify_case_variants).  Included by the test files that need them.
 */
#ifndef VERIFY_VARIANTS_H
#define VERIFY_VARIANTS_H

#include <stdlib.h>

#include <criterion/criterion.h>

#include "attn_runtime.h"
#include "attn_verify.h"

#define MAX_VARIANTS ATTN_ISA_COUNT /* a kernel has one variant an ISA at most */

/* The variants of k this CPU runs, in the kernel's order, into vs; asserts
   there is one.  Returns how many. */
static inline int runnable_variants(const attn_kernel *k, const attn_variant **vs)
{
    int i, n = 0;
    for (i = 0; i < k->n_variants && n < MAX_VARIANTS; i++)
        if (attn_isa_supported(k->variants[i].isa)) vs[n++] = &k->variants[i];
    cr_assert_gt(n, 0, "%s: no runnable variant", k->spec.name);
    return n;
}

/* Case c on the nv variants vs, the inputs and the reference built once:
   each must run and agree with the reference. */
static inline void expect_case_on_variants(const attn_kernel *k, const attn_variant *const *vs, int nv,
                                           const attn_case *c)
{
    attn_verify_result res[MAX_VARIANTS];
    attn_status st[MAX_VARIANTS];
    char shape[160];
    int i;
    attn_verify_case_variants(k, vs, nv, c, res, st);
    attn_verify_case_string(c, shape, sizeof shape);
    for (i = 0; i < nv; i++) {
        cr_assert_eq(st[i], ATTN_OK, "%s/%s %s: %s (%s)", k->spec.name, attn_isa_name(vs[i]->isa), shape,
                     attn_status_string(st[i]), res[i].first_failure);
        cr_expect_eq(res[i].failures, 0, "%s/%s %s: %d elements off; first: %s", k->spec.name,
                     attn_isa_name(vs[i]->isa), shape, res[i].failures, res[i].first_failure);
    }
}

/* Whether the long cases run on s's kernel: a test config's (configs/test/,
   the KERNEL_TEST_CONFIG lines of kernel_list.h), or any kernel's under make
   test-full (TEST_FULL set and not empty).  A preset is a model's shape (32
   heads of 128 and more) with options the test configs have on small shapes
   (tests/spec/families_spec.lua checks that they have every feature of the
   presets), so make test runs the presets' own shapes in the shorter cases. */
#define KERNEL(name) extern const attn_kernel attn_##name##_kernel;
#include "kernel_list.h"
#undef KERNEL
static inline int runs_long_cases(const attn_spec *s)
{
    const char *full = getenv("TEST_FULL");
    if (full != NULL && full[0] != '\0') return 1;
#define KERNEL(name)
#define KERNEL_TEST_CONFIG(name) \
    if (s == &attn_##name##_kernel.spec) return 1;
#include "kernel_list.h"
#undef KERNEL
    return 0;
}

#endif
