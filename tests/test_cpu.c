/*
 * test_cpu.c - the CPU profile (attn_cpu): filled once, its fields sane, the
 * profile of this CPU picked by the table's rules, each profile reachable by
 * ATTNGEN_CPU with the table's values, and every ATTNGEN_* override.
 * Criterion runs each test in a fresh process, so each fills the profile
 * anew from the environment it sets first.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_runtime.h"
#include "attn_cpu_profiles.h"

#define N_PROFILES ((int)(sizeof attn_cpu_profiles / sizeof *attn_cpu_profiles))

/* The table's entry of a profile name (fails the test when there is none). */
static const attn_cpu_entry *entry_named(const char *name)
{
    int i;
    for (i = 0; i < N_PROFILES; i++)
        if (strcmp(attn_cpu_profiles[i].name, name) == 0) return &attn_cpu_profiles[i];
    cr_assert_fail("no CPU profile named %s", name);
    return NULL;
}

/* p holds its entry's choices (no override set). */
static void expect_entry(const attn_cpu_profile *p, const attn_cpu_entry *e)
{
    cr_expect_str_eq(p->name, e->name);
    cr_expect_eq(p->decode_prefetch, e->decode_prefetch);
    cr_expect_eq(p->decode_key_pairs, e->decode_key_pairs);
    cr_expect_eq(p->decode_even_rows, e->decode_even_rows);
    cr_expect_eq(p->decode_half_pairs, e->decode_half_pairs);
    cr_expect_eq(p->decode_stream_rows[0], e->decode_stream_rows);
    cr_expect_eq(p->decode_stream_rows[1],
                 e->decode_half_pairs ? e->decode_stream_rows_half_pairs : e->decode_stream_rows);
    cr_expect_eq(p->bf16_dot, e->bf16_dot);
}

static void *call_attn_cpu(void *out)
{
    *(const attn_cpu_profile **)out = attn_cpu();
    return NULL;
}

Test(cpu, filled_once)
{
    enum { N = 8 };
    pthread_t t[N];
    const attn_cpu_profile *got[N], *p;
    int i, prefetch;
    for (i = 0; i < N; i++) cr_assert_eq(pthread_create(&t[i], NULL, call_attn_cpu, &got[i]), 0);
    for (i = 0; i < N; i++) cr_assert_eq(pthread_join(t[i], NULL), 0);
    p = attn_cpu();
    for (i = 0; i < N; i++) cr_expect_eq(got[i], p, "thread %d saw another profile", i);
    /* the environment is read once: a later override changes nothing */
    prefetch = p->decode_prefetch;
    setenv("ATTNGEN_DECODE_PREFETCH", prefetch == ATTN_PREFETCH_L1 ? "2" : "1", 1);
    setenv("ATTNGEN_CPU", strcmp(p->name, "intel") == 0 ? "zen4" : "intel", 1);
    cr_expect_eq(attn_cpu(), p);
    cr_expect_eq(attn_cpu()->decode_prefetch, prefetch);
}

Test(cpu, fields_are_sane)
{
    const attn_cpu_profile *p = attn_cpu();
    long os_l1d = -1;
    cr_assert_not_null(p->name);
    entry_named(p->name);
    cr_expect_lt(strlen(p->vendor), sizeof p->vendor);
#if defined(__x86_64__) || defined(__i386__)
    cr_expect_eq(strlen(p->vendor), 12, "cpuid's vendor string: '%s'", p->vendor);
    cr_expect_gt(p->family, 0);
#endif
    cr_expect_geq(p->l1d_bytes, 4096);
    cr_expect_leq(p->l1d_bytes, (size_t)1 << 24);
    cr_expect_geq(p->l2_bytes, 65536);
    cr_expect_leq(p->l2_bytes, (size_t)1 << 30);
#ifdef _SC_LEVEL1_DCACHE_SIZE
    os_l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
#endif
    if (os_l1d > 0) cr_expect_eq(p->l1d_bytes, (size_t)os_l1d, "the OS says %ld", os_l1d);
    cr_expect(p->decode_prefetch == ATTN_PREFETCH_NONE || p->decode_prefetch == ATTN_PREFETCH_L1 ||
              p->decode_prefetch == ATTN_PREFETCH_L2);
    cr_expect(p->decode_key_pairs == 0 || p->decode_key_pairs == 1);
    cr_expect(p->decode_even_rows == 0 || p->decode_even_rows == 1);
    cr_expect(p->decode_half_pairs == 0 || p->decode_half_pairs == 1);
    cr_expect(p->bf16_dot == 0 || p->bf16_dot == 1);
    cr_expect(p->decode_stream_rows[0] >= 0 && p->decode_stream_rows[0] <= 4);
    cr_expect(p->decode_stream_rows[1] >= 0 && p->decode_stream_rows[1] <= 4);
}

/* Without ATTNGEN_CPU: the first entry whose vendor, family, model and ISA
   match (the last entry matches every CPU), with that entry's choices. */
Test(cpu, picks_this_cpu_by_the_table)
{
    const attn_cpu_profile *p = attn_cpu();
    const attn_cpu_entry *want = &attn_cpu_profiles[N_PROFILES - 1];
    int i;
    cr_assert_null(want->vendor, "the last profile matches every CPU");
    for (i = 0; i < N_PROFILES - 1; i++) {
        const attn_cpu_entry *e = &attn_cpu_profiles[i];
        if ((e->vendor == NULL || strcmp(e->vendor, p->vendor) == 0) && p->family >= e->family_lo &&
            p->family <= e->family_hi && p->model >= e->model_lo && p->model <= e->model_hi &&
            (e->isa < 0 || attn_isa_supported((attn_isa)e->isa))) {
            want = e;
            break;
        }
    }
    expect_entry(p, want);
    /* the rules the profiles were measured for */
    if (strcmp(p->vendor, "GenuineIntel") == 0) cr_expect_str_eq(p->name, "intel");
    if (strcmp(p->vendor, "AuthenticAMD") == 0 && attn_isa_supported(ATTN_ISA_AVX512))
        cr_expect_str_eq(p->name, p->family == 0x19 ? "zen4" : p->family > 0x19 ? "zen5" : "generic");
#if !defined(__x86_64__) && !defined(__i386__)
    cr_expect_str_eq(p->name, "generic");
#endif
}

static void forced(const char *name)
{
    const attn_cpu_entry *e = entry_named(name);
    setenv("ATTNGEN_CPU", name, 1);
    expect_entry(attn_cpu(), e);
}

Test(cpu, zen5_by_name)
{
    forced("zen5");
    cr_expect_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L2);
    cr_expect_eq(attn_cpu()->decode_stream_rows[0], 4);
    cr_expect_eq(attn_cpu()->decode_stream_rows[1], 1);
}

Test(cpu, zen4_by_name)
{
    forced("zen4");
    cr_expect_eq(attn_cpu()->decode_key_pairs, 1);
    cr_expect_eq(attn_cpu()->decode_stream_rows[0], 1);
    cr_expect_eq(attn_cpu()->decode_stream_rows[1], 1);
}

Test(cpu, intel_by_name)
{
    forced("intel");
    cr_expect_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_NONE);
    cr_expect_eq(attn_cpu()->bf16_dot, 0);
}

Test(cpu, generic_by_name)
{
    forced("generic");
    cr_expect_eq(attn_cpu()->decode_prefetch, ATTN_PREFETCH_L1);
    cr_expect_eq(attn_cpu()->decode_half_pairs, 0);
}

/* An unknown name leaves the CPU's own profile (the table's rules above). */
Test(cpu, unknown_profile_name_is_ignored)
{
    setenv("ATTNGEN_CPU", "no_such_cpu", 1);
    cr_expect_str_neq(attn_cpu()->name, "no_such_cpu");
    entry_named(attn_cpu()->name);
}

Test(cpu, every_override_applies)
{
    const attn_cpu_profile *p;
    setenv("ATTNGEN_CPU", "zen4", 1);
    setenv("ATTNGEN_DECODE_PREFETCH", "0", 1);
    setenv("ATTNGEN_DECODE_KEY_PAIRS", "0", 1);
    setenv("ATTNGEN_DECODE_EVEN_ROWS", "0", 1);
    setenv("ATTNGEN_DECODE_HALF_PAIRS", "0", 1);
    setenv("ATTNGEN_DECODE_STREAM_ROWS", "3", 1);
    setenv("ATTNGEN_BF16_DOT", "0", 1);
    p = attn_cpu();
    cr_expect_str_eq(p->name, "zen4");
    cr_expect_eq(p->decode_prefetch, ATTN_PREFETCH_NONE);
    cr_expect_eq(p->decode_key_pairs, 0);
    cr_expect_eq(p->decode_even_rows, 0);
    cr_expect_eq(p->decode_half_pairs, 0);
    cr_expect_eq(p->decode_stream_rows[0], 3);
    cr_expect_eq(p->decode_stream_rows[1], 3);
    cr_expect_eq(p->bf16_dot, 0);
}

/* Zen 5 streams one row a kv head only where the blocked kernel has its
   half-width pairs and the profile takes them. */
Test(cpu, stream_rows_follow_half_pairs)
{
    setenv("ATTNGEN_CPU", "zen5", 1);
    setenv("ATTNGEN_DECODE_HALF_PAIRS", "0", 1);
    cr_expect_eq(attn_cpu()->decode_stream_rows[0], 4);
    cr_expect_eq(attn_cpu()->decode_stream_rows[1], 4);
}

/* Values out of range leave the profile's choice. */
Test(cpu, bad_override_values_are_ignored)
{
    const attn_cpu_entry *e = entry_named("generic");
    setenv("ATTNGEN_CPU", "generic", 1);
    setenv("ATTNGEN_DECODE_PREFETCH", "3", 1);
    setenv("ATTNGEN_DECODE_KEY_PAIRS", "yes", 1);
    setenv("ATTNGEN_DECODE_STREAM_ROWS", "5", 1);
    setenv("ATTNGEN_BF16_DOT", "", 1);
    expect_entry(attn_cpu(), e);
}
