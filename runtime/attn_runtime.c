/*
 * attn_runtime.c - the runtime every attngen kernel links against.
 *
 * Vendorable: plain C99 and libc only (getenv, malloc, memcpy, strcmp), and
 * on Linux sysconf, open and read for the cache sizes; no stdio.  Includes
 * attn_cpu_profiles.h, the table of CPU profiles (generated).
 * Builds with or without _POSIX_C_SOURCE, on x86-64, AArch64 and anything
 * else (where only the scalar variant is reported as supported).
 */
#include "attn_runtime.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ATTN_X86_CPUID 1
#include <cpuid.h>
#endif

#if defined(__linux__) /* the cache sizes the OS reports (sysconf, sysfs) */
#include <fcntl.h>
#include <unistd.h>
#endif

#if defined(__aarch64__) && defined(__linux__) /* dotprod (attn_cpu_profile's int8_dot) */
#include <sys/auxv.h>
#endif

/* ---- status strings ----------------------------------------------------- */

const char *attn_status_string(attn_status status)
{
    switch (status) {
    case ATTN_OK: return "success";
    case ATTN_ERR_NULL_ARG: return "a required pointer is NULL";
    case ATTN_ERR_SHAPE: return "a batch or sequence length is negative";
    case ATTN_ERR_STRIDE: return "a stride is negative";
    case ATTN_ERR_SEQLENS: return "a seqlens_k value is outside 0..seq_k";
    case ATTN_ERR_THREADS: return "the thread count is negative";
    case ATTN_ERR_ISA:
        return "no ISA variant of this kernel can run on this CPU "
               "(or ATTNGEN_ISA names one that cannot)";
    case ATTN_ERR_NOMEM: return "out of memory";
    case ATTN_ERR_TOO_LARGE: return "a tensor is too large for 64-bit element offsets";
    case ATTN_ERR_DROPOUT: return "dropout_p is outside [0, 1)";
    case ATTN_ERR_PAGE: return "a block-table entry names no page of the K/V pools, or -1 where a row sees the page";
    case ATTN_ERR_ROPE: return "a query row's position is outside the RoPE table (0..rope_rows-1)";
    case ATTN_ERR_CAPACITY: return "appending: seqlens_k[b] + seq_new is past the cache's seq_k";
    case ATTN_ERR_WORKSPACE: return "workspace_bytes is below the kernel's workspace size";
    }
    return "unknown status";
}

/* ---- names of the lists ------------------------------------------------- */

#define ATTN_NAME_ENTRY_(id, name) #name,
#define ATTN_DTYPE_NAME_(id, name, bytes) #name,
#define ATTN_DTYPE_SIZE_(id, name, bytes) bytes,

static const char *const isa_names[ATTN_ISA_COUNT] = { ATTN_ISA_LIST(ATTN_NAME_ENTRY_) };
static const char *const family_names[ATTN_FAMILY_COUNT] = { ATTN_FAMILY_LIST(ATTN_NAME_ENTRY_) };
static const char *const dtype_names[ATTN_DTYPE_COUNT] = { ATTN_DTYPE_LIST(ATTN_DTYPE_NAME_) };
static const unsigned char dtype_sizes[ATTN_DTYPE_COUNT] = { ATTN_DTYPE_LIST(ATTN_DTYPE_SIZE_) };

#undef ATTN_NAME_ENTRY_
#undef ATTN_DTYPE_NAME_
#undef ATTN_DTYPE_SIZE_

const char *attn_isa_name(attn_isa isa)
{
    if ((int)isa < 0 || (int)isa >= ATTN_ISA_COUNT)
        return "unknown";
    return isa_names[isa];
}

const char *attn_family_name(attn_family family)
{
    if ((int)family < 0 || (int)family >= ATTN_FAMILY_COUNT)
        return "unknown";
    return family_names[family];
}

const char *attn_dtype_name(attn_dtype dtype)
{
    if ((int)dtype < 0 || (int)dtype >= ATTN_DTYPE_COUNT)
        return "unknown";
    return dtype_names[dtype];
}

size_t attn_dtype_size(attn_dtype dtype)
{
    if ((int)dtype < 0 || (int)dtype >= ATTN_DTYPE_COUNT)
        return 0;
    return dtype_sizes[dtype];
}

int attn_dtype_values(attn_dtype dtype)
{
    if ((int)dtype < 0 || (int)dtype >= ATTN_DTYPE_COUNT)
        return 0;
    return dtype == ATTN_DTYPE_Q8_0 || dtype == ATTN_DTYPE_Q4_0 ? ATTN_QK : 1;
}

/* ---- storage-type conversions ------------------------------------------ */

/*
 * Integer arithmetic on the bit patterns (memcpy for the casts), so the
 * result is the same whatever the FPU's rounding mode and flush settings.
 * Rounding to nearest even by the usual carry trick: adding half an ulp of
 * the target minus one, plus the target's lowest kept bit, carries into the
 * kept bits exactly when the dropped bits are above half, or exactly half
 * with an odd kept part.  A carry out of the mantissa bumps the exponent,
 * which is the right result (up to infinity) in every case.
 */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t attn_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and top payload, set quiet bit */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float attn_bf16_to_f32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

uint16_t attn_f32_to_f16(float x)
{
    const uint32_t u = f32_bits(x);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    uint32_t r;

    if (a > 0x7f800000u) /* NaN: keep sign and top payload, set quiet bit */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
    if (a >= 0x477ff000u) /* >= 65520 (65504 plus half an ulp), and inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: a normal f16 */
        r = a - 0x38000000u; /* rebias the exponent: 127 - 15 = 112 */
        r += 0x0fffu + ((r >> 13) & 1u);
        return (uint16_t)(sign | (r >> 13));
    }
    if (a <= 0x33000000u) /* <= 2^-25 (half the smallest subnormal; a tie goes to 0) */
        return (uint16_t)sign;
    {
        /* a subnormal f16: the value in units of 2^-24 is m * 2^(e - 126),
           with e the biased f32 exponent (102..112) and m the 24-bit
           significand: shift right by 126 - e (14..24), rounding */
        const uint32_t e = a >> 23, m = (a & 0x007fffffu) | 0x00800000u;
        const uint32_t shift = 126u - e;
        const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        r = m >> shift;
        if (rest > half || (rest == half && (r & 1u)))
            r++; /* may carry into the smallest normal, 0x0400: still right */
        return (uint16_t)(sign | r);
    }
}

float attn_f16_to_f32(uint16_t h)
{
    const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    const uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t man = (uint32_t)h & 0x03ffu, e;

    if (exp == 0x1fu) /* inf, NaN (payload kept) */
        return f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp != 0)
        return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0)
        return f32_from_bits(sign);
    /* subnormal: man * 2^-24; normalize so the leading 1 is bit 10 */
    e = 113u; /* the biased f32 exponent of 2^-14 */
    while (!(man & 0x0400u)) {
        man <<= 1;
        e--;
    }
    return f32_from_bits(sign | (e << 23) | ((man & 0x03ffu) << 13));
}

void attn_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = attn_f32_to_bf16(src[i]);
}

void attn_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = attn_bf16_to_f32(src[i]);
}

#ifdef ATTN_X86_CPUID
#include <immintrin.h>
/* Eight values at a time with F16C's vcvtps2ph (round to nearest even,
   imm8 0: the same results as attn_f32_to_f16, NaN payloads included);
   the tail through attn_f32_to_f16.  Every CPU with the AVX2 variant has
   F16C (detect_x86).  It makes storing into an f16 cache (appending)
   memory-bound instead of bound by the scalar conversion's branches. */
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const float *src, uint16_t *dst, size_t n)
{
    size_t i;
    for (i = 0; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0));
    for (; i < n; i++)
        dst[i] = attn_f32_to_f16(src[i]);
}
#endif

void attn_f32_to_f16_array(const float *src, uint16_t *dst, size_t n)
{
    size_t i;
#ifdef ATTN_X86_CPUID
    if (n >= 8 && attn_isa_supported(ATTN_ISA_AVX2)) {
        f32_to_f16_f16c(src, dst, n);
        return;
    }
#endif
    for (i = 0; i < n; i++)
        dst[i] = attn_f32_to_f16(src[i]);
}

void attn_f16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = attn_f16_to_f32(src[i]);
}

void attn_f32_to_dtype_array(attn_dtype dtype, const float *src, void *dst, size_t n)
{
    switch (dtype) {
    case ATTN_DTYPE_BF16: attn_f32_to_bf16_array(src, (uint16_t *)dst, n); break;
    case ATTN_DTYPE_F16: attn_f32_to_f16_array(src, (uint16_t *)dst, n); break;
    case ATTN_DTYPE_Q8_0: (void)attn_quantize_q8_0(src, dst, (int64_t)n); break;
    case ATTN_DTYPE_Q4_0: (void)attn_quantize_q4_0(src, dst, (int64_t)n); break;
    default:
        if (n > 0 && (const void *)src != dst)
            memmove(dst, src, n * sizeof(float));
        break;
    }
}

void attn_dtype_to_f32_array(attn_dtype dtype, const void *src, float *dst, size_t n)
{
    switch (dtype) {
    case ATTN_DTYPE_BF16: attn_bf16_to_f32_array((const uint16_t *)src, dst, n); break;
    case ATTN_DTYPE_F16: attn_f16_to_f32_array((const uint16_t *)src, dst, n); break;
    case ATTN_DTYPE_Q8_0: (void)attn_dequantize_q8_0(src, dst, (int64_t)n); break;
    case ATTN_DTYPE_Q4_0: (void)attn_dequantize_q4_0(src, dst, (int64_t)n); break;
    default:
        if (n > 0 && src != (const void *)dst)
            memmove(dst, src, n * sizeof(float));
        break;
    }
}

/* ---- llama.cpp's quantized blocks (q8_0, q4_0) ---------------------------- */

/* |x|, by clearing the sign bit (so -0 gives +0, as fabsf does). */
static float abs_f32(float x)
{
    return f32_from_bits(f32_bits(x) & 0x7fffffffu);
}

/* The low byte of x86-64's float-to-int32 conversion of an integral value r:
   what ggml's reference quantizers store when they assign a float to an
   int8_t.  C leaves a value outside the target's range undefined; x86-64
   gives 0x80000000 for NaN, infinities and anything outside int32's range,
   whose low byte is 0.  Every finite block's values stay in range. */
static int x86_int8(float r)
{
    if (!(r >= -2147483648.0f && r < 2147483648.0f))
        return 0;
    return (int)(int8_t)(uint8_t)(uint32_t)(int32_t)r;
}

/* C's roundf (halves away from zero) without libm: the truncation and the
   exact remainder (the fraction bits below 2^23, 0 above).  Values outside
   int32's range (NaN and infinities included) are returned as they are. */
static float round_half_away(float v)
{
    float t, frac;
    if (!(v >= -2147483648.0f && v < 2147483648.0f))
        return v;
    t = (float)(int32_t)v;
    frac = v - t;
    return frac >= 0.5f ? t + 1.0f : frac <= -0.5f ? t - 1.0f : t;
}

int attn_quantize_q8_0(const float *x, void *blocks, int64_t n)
{
    attn_block_q8_0 *y = (attn_block_q8_0 *)blocks;
    int64_t b;
    int j;

    if (n < 0 || n % ATTN_QK != 0)
        return ATTN_ERR_SHAPE;
    for (b = 0; b < n / ATTN_QK; b++) {
        const float *xb = x + b * ATTN_QK;
        float amax = 0.0f, d, id;
        for (j = 0; j < ATTN_QK; j++) { /* ggml's MAX(amax, fabsf(v)): a NaN is replaced by the next value */
            const float a = abs_f32(xb[j]);
            amax = amax > a ? amax : a;
        }
        d = amax / 127.0f;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = attn_f32_to_f16(d);
        for (j = 0; j < ATTN_QK; j++)
            y[b].q[j] = (int8_t)x86_int8(round_half_away(xb[j] * id));
    }
    return ATTN_OK;
}

int attn_quantize_q4_0(const float *x, void *blocks, int64_t n)
{
    attn_block_q4_0 *y = (attn_block_q4_0 *)blocks;
    int64_t b;
    int j;

    if (n < 0 || n % ATTN_QK != 0)
        return ATTN_ERR_SHAPE;
    for (b = 0; b < n / ATTN_QK; b++) {
        const float *xb = x + b * ATTN_QK;
        float amax = 0.0f, max = 0.0f, d, id;
        for (j = 0; j < ATTN_QK; j++) { /* the first value of largest |x|, its sign kept; NaN never wins */
            const float a = abs_f32(xb[j]);
            if (amax < a) {
                amax = a;
                max = xb[j];
            }
        }
        d = max / -8.0f;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = attn_f32_to_f16(d);
        for (j = 0; j < ATTN_QK / 2; j++) { /* value j in the low nibble, value j + 16 in the high one */
            int lo = x86_int8(xb[j] * id + 8.5f), hi = x86_int8(xb[j + ATTN_QK / 2] * id + 8.5f);
            lo = lo < 15 ? lo : 15;
            hi = hi < 15 ? hi : 15;
            y[b].q[j] = (uint8_t)((unsigned)lo | ((unsigned)hi << 4));
        }
    }
    return ATTN_OK;
}

int attn_dequantize_q8_0(const void *blocks, float *x, int64_t n)
{
    const attn_block_q8_0 *y = (const attn_block_q8_0 *)blocks;
    int64_t b;
    int j;

    if (n < 0 || n % ATTN_QK != 0)
        return ATTN_ERR_SHAPE;
    for (b = 0; b < n / ATTN_QK; b++) {
        const float d = attn_f16_to_f32(y[b].d);
        for (j = 0; j < ATTN_QK; j++)
            x[b * ATTN_QK + j] = (float)y[b].q[j] * d;
    }
    return ATTN_OK;
}

int attn_dequantize_q4_0(const void *blocks, float *x, int64_t n)
{
    const attn_block_q4_0 *y = (const attn_block_q4_0 *)blocks;
    int64_t b;
    int j;

    if (n < 0 || n % ATTN_QK != 0)
        return ATTN_ERR_SHAPE;
    for (b = 0; b < n / ATTN_QK; b++) {
        const float d = attn_f16_to_f32(y[b].d);
        for (j = 0; j < ATTN_QK / 2; j++) {
            x[b * ATTN_QK + j] = (float)((int)(y[b].q[j] & 0x0f) - 8) * d;
            x[b * ATTN_QK + j + ATTN_QK / 2] = (float)((int)(y[b].q[j] >> 4) - 8) * d;
        }
    }
    return ATTN_OK;
}

int attn_isa_from_name(const char *name)
{
    int i;
    if (name == NULL)
        return -1;
    for (i = 0; i < ATTN_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0)
            return i;
    return -1;
}

/* ---- CPU features ------------------------------------------------------- */

#ifdef ATTN_X86_CPUID
/* XCR0: which register state the OS saves on a context switch. */
static unsigned long long read_xcr0(void)
{
    unsigned int eax, edx;
    /* xgetbv with ecx = 0; spelled as bytes so no -mxsave is needed. */
    __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

/* Bit i set: ISA i is usable by this process. */
static unsigned detect_x86(void)
{
    unsigned int a, b, c, d;
    unsigned found = 1u << ATTN_ISA_SCALAR;
    int osxsave, avx, fma, f16c, avx2 = 0, avx512f = 0, avx512bw = 0, avx512vl = 0, avx512bf16 = 0;
    unsigned long long xcr0;

    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d))
        return found;
    fma = (c >> 12) & 1;
    f16c = (c >> 29) & 1; /* f16 storage on the AVX2 variant (every AVX2 CPU has it) */
    osxsave = (c >> 27) & 1;
    avx = (c >> 28) & 1;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        avx2 = (b >> 5) & 1;
        avx512f = (b >> 16) & 1;
        avx512bw = (b >> 30) & 1;
        avx512vl = (b >> 31) & 1;
        /* leaf 7, sub-leaf 1, EAX bit 5: AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) */
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) avx512bf16 = (a >> 5) & 1;
    }
    if (!osxsave || !avx)
        return found; /* no XGETBV, or no AVX at all */
    xcr0 = read_xcr0();
    /* bits 1, 2: SSE and YMM state */
    if (avx2 && fma && f16c && (xcr0 & 0x6) == 0x6)
        found |= 1u << ATTN_ISA_AVX2;
    /* bits 5, 6, 7: opmask, ZMM0-15 upper halves, ZMM16-31 (plus 1, 2) */
    if (avx512f && fma && (xcr0 & 0xe6) == 0xe6) {
        found |= 1u << ATTN_ISA_AVX512;
        if (avx512bw && avx512vl && avx512bf16) found |= 1u << ATTN_ISA_AVX512BF16;
    }
    return found;
}
#endif

/* The integer dot-product extensions (attn_cpu_profile's int8_dot): AVX512-VNNI
   with AVX512VL and BW (vpdpbusd on 256-bit vectors) in a usable AVX-512 state,
   AVX-VNNI in a usable AVX state, AArch64 Linux's dotprod (sdot). */
static int detect_int8_dot(void)
{
    int found = 0;
#if defined(ATTN_X86_CPUID)
    unsigned int a, b, c, d;
    unsigned isas = detect_x86();
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        const int vl_bw = (b >> 31) & 1 && (b >> 30) & 1, vnni512 = (c >> 11) & 1;
        if (vl_bw && vnni512 && (isas & (1u << ATTN_ISA_AVX512))) found |= ATTN_INT8_DOT_AVX512VNNI;
        /* leaf 7, sub-leaf 1, EAX bit 4: AVX-VNNI */
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1) && (isas & (1u << ATTN_ISA_AVX2)))
            found |= ATTN_INT8_DOT_AVXVNNI;
    }
#elif defined(__aarch64__) && defined(__linux__)
    found |= (getauxval(AT_HWCAP) & (1ul << 20)) ? ATTN_INT8_DOT_DOTPROD : 0; /* HWCAP_ASIMDDP */
#endif
    return found;
}

static unsigned detect_isas(void)
{
    unsigned found = 1u << ATTN_ISA_SCALAR;
#if defined(ATTN_X86_CPUID)
    found = detect_x86();
#elif defined(__aarch64__)
    found |= 1u << ATTN_ISA_NEON; /* Advanced SIMD is mandatory on AArch64 */
#endif
    return found;
}

/*
 * Values computed once per process (0 until then).  Computing them is
 * idempotent, so two threads racing here both compute and store the same
 * value.
 */
static unsigned cache_load(const unsigned *cache)
{
#ifdef __GNUC__
    return __atomic_load_n(cache, __ATOMIC_ACQUIRE);
#else
    return *cache;
#endif
}

static void cache_store(unsigned *cache, unsigned value)
{
#ifdef __GNUC__
    __atomic_store_n(cache, value, __ATOMIC_RELEASE);
#else
    *cache = value;
#endif
}

/* The detected set, cached with a "done" bit. */
#define ISA_CACHE_DONE 0x80000000u
static unsigned isa_cache;

int attn_isa_supported(attn_isa isa)
{
    unsigned set;
    if ((int)isa < 0 || (int)isa >= ATTN_ISA_COUNT)
        return 0;
    set = cache_load(&isa_cache);
    if (!(set & ISA_CACHE_DONE)) {
        set = detect_isas() | ISA_CACHE_DONE;
        cache_store(&isa_cache, set);
    }
    return (set >> isa) & 1u;
}

/* The environment variable NAME when it holds one digit from 0 to max, else value. */
static int env_digit(const char *name, int max, int value)
{
    const char *e = getenv(name);
    if (e != NULL && e[0] >= '0' && e[0] <= '0' + max && e[1] == '\0')
        return e[0] - '0';
    return value;
}

/* ---- the CPU profile ---------------------------------------------------- */

#include "attn_cpu_profiles.h"

#define CPU_PROFILE_COUNT ((int)(sizeof attn_cpu_profiles / sizeof *attn_cpu_profiles))

/* cpuid's vendor string and display family and model (0 and "" without cpuid). */
static void cpu_identity(attn_cpu_profile *p)
{
#ifdef ATTN_X86_CPUID
    unsigned int a, b, c, d, regs[3], base, model;
    /* the vendor string is in EBX, EDX, ECX, four characters each */
    if (__get_cpuid(0, &a, &regs[0], &regs[2], &regs[1]))
        memcpy(p->vendor, regs, 12);
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        base = (a >> 8) & 0xfu;
        model = (a >> 4) & 0xfu;
        p->family = (int)(base == 0xfu ? base + ((a >> 20) & 0xffu) : base);
        p->model = (int)(base == 0x6u || base == 0xfu ? model | ((a >> 12) & 0xf0u) : model);
    }
#else
    (void)p;
#endif
}

/* The profile ATTNGEN_CPU names, else the first that matches this CPU (the
   last one matches every CPU). */
static const attn_cpu_entry *cpu_entry(const attn_cpu_profile *p)
{
    const char *forced = getenv("ATTNGEN_CPU");
    int i;
    if (forced != NULL)
        for (i = 0; i < CPU_PROFILE_COUNT; i++)
            if (strcmp(forced, attn_cpu_profiles[i].name) == 0)
                return &attn_cpu_profiles[i];
    for (i = 0; i < CPU_PROFILE_COUNT - 1; i++) {
        const attn_cpu_entry *e = &attn_cpu_profiles[i];
        if (e->vendor != NULL && strcmp(e->vendor, p->vendor) != 0)
            continue;
        if (p->family < e->family_lo || p->family > e->family_hi || p->model < e->model_lo || p->model > e->model_hi)
            continue;
        if (e->isa >= 0 && !attn_isa_supported((attn_isa)e->isa))
            continue;
        return e;
    }
    return &attn_cpu_profiles[CPU_PROFILE_COUNT - 1];
}

#if defined(__linux__)
/* The first line of a small file, NUL-terminated; 0 when it cannot be read. */
static int read_line(const char *file, char *buf, int n)
{
    int fd = open(file, O_RDONLY);
    long got;
    if (fd < 0)
        return 0;
    got = (long)read(fd, buf, (size_t)n - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    return 1;
}

/* A cache size as sysfs writes it ("48K", "1024K", "32M"), in bytes; 0 if unreadable. */
static size_t parse_size(const char *s)
{
    size_t v = 0;
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9' && v < ((size_t)1 << 40))
        v = v * 10 + (size_t)(*s++ - '0');
    return *s == 'K' ? v << 10 : *s == 'M' ? v << 20 : *s == 'G' ? v << 30 : v;
}

/* The data (or unified) cache of a level, from cpu0's entries in sysfs; 0 if none says. */
static size_t sysfs_cache_bytes(int level)
{
    char file[] = "/sys/devices/system/cpu/cpu0/cache/index0/level", buf[32];
    char *idx = file + sizeof "/sys/devices/system/cpu/cpu0/cache/index" - 1, *leaf = idx + 2;
    for (*idx = '0'; *idx <= '9'; (*idx)++) {
        memcpy(leaf, "level", 6);
        if (!read_line(file, buf, (int)sizeof buf))
            break;
        if (buf[0] - '0' != level || (buf[1] != '\n' && buf[1] != '\0'))
            continue;
        memcpy(leaf, "type", 5);
        if (!read_line(file, buf, (int)sizeof buf) || (strncmp(buf, "Data", 4) != 0 && strncmp(buf, "Unified", 7) != 0))
            continue;
        memcpy(leaf, "size", 5);
        return read_line(file, buf, (int)sizeof buf) ? parse_size(buf) : 0;
    }
    return 0;
}
#endif

/* A core's L1 data (level 1) or L2 cache as the OS reports it, else fallback. */
static size_t os_cache_bytes(int level, size_t fallback)
{
    size_t bytes = 0;
#if defined(__linux__)
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    const long v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
    if (v > 0)
        bytes = (size_t)v;
#endif
    if (bytes == 0)
        bytes = sysfs_cache_bytes(level);
#else
    (void)level;
#endif
    return bytes > 0 ? bytes : fallback;
}

/* Fills p: the CPU, its profile, the environment's overrides, the caches. */
static void fill_profile(attn_cpu_profile *p)
{
    const attn_cpu_entry *e;
    int rows;
    memset(p, 0, sizeof *p);
    cpu_identity(p);
    e = cpu_entry(p);
    p->name = e->name;
    p->decode_prefetch = env_digit("ATTNGEN_DECODE_PREFETCH", ATTN_PREFETCH_L2, e->decode_prefetch);
    p->decode_key_pairs = env_digit("ATTNGEN_DECODE_KEY_PAIRS", 1, e->decode_key_pairs);
    p->decode_even_rows = env_digit("ATTNGEN_DECODE_EVEN_ROWS", 1, e->decode_even_rows);
    p->decode_half_pairs = env_digit("ATTNGEN_DECODE_HALF_PAIRS", 1, e->decode_half_pairs);
    rows = env_digit("ATTNGEN_DECODE_STREAM_ROWS", 4, -1);
    p->decode_stream_rows[0] = rows >= 0 ? rows : e->decode_stream_rows;
    p->decode_stream_rows[1] = rows >= 0 ? rows
                               : p->decode_half_pairs ? e->decode_stream_rows_half_pairs : e->decode_stream_rows;
    p->bf16_dot = env_digit("ATTNGEN_BF16_DOT", 1, e->bf16_dot);
    p->int8_dot = env_digit("ATTNGEN_INT8_DOT", 0, -1) == 0 ? 0 : detect_int8_dot();
    p->l1d_bytes = os_cache_bytes(1, (size_t)e->l1d_bytes);
    p->l2_bytes = os_cache_bytes(2, (size_t)e->l2_bytes);
}

/*
 * Filled once: the first caller to move the state from 0 (empty) to 1
 * (filling) fills it and publishes 2 (filled); a caller that finds it
 * filling waits the few microseconds until it is filled.  (Without GNU C's
 * atomics, two racing first callers both fill it with the same values.)
 */
static attn_cpu_profile cpu_profile;
static unsigned cpu_profile_state;

const attn_cpu_profile *attn_cpu(void)
{
#ifdef __GNUC__
    unsigned expected = 0;
    if (__atomic_load_n(&cpu_profile_state, __ATOMIC_ACQUIRE) == 2)
        return &cpu_profile;
    if (__atomic_compare_exchange_n(&cpu_profile_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        fill_profile(&cpu_profile);
        __atomic_store_n(&cpu_profile_state, 2, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(&cpu_profile_state, __ATOMIC_ACQUIRE) != 2)
            continue;
    }
#else
    if (cpu_profile_state != 2) {
        fill_profile(&cpu_profile);
        cpu_profile_state = 2;
    }
#endif
    return &cpu_profile;
}

/* ATTNGEN_STREAM_OUTPUT, read once: cached as 1 + the mode. */
static unsigned stream_output_cache;

int attn_stream_output(const void *o, const int64_t stride[3], size_t elem, int64_t bytes, size_t vec)
{
    unsigned cached = cache_load(&stream_output_cache);
    int mode, i;
    if (cached == 0) {
        cached = 1u + (unsigned)env_digit("ATTNGEN_STREAM_OUTPUT", 2, 2);
        cache_store(&stream_output_cache, cached);
    }
    mode = (int)cached - 1;
    if (mode == 0 || (mode == 2 && bytes < ATTN_STREAM_OUTPUT_BYTES) || (uintptr_t)o % vec != 0)
        return 0;
    for (i = 0; i < 3; i++)
        if ((uint64_t)stride[i] * elem % vec != 0) return 0;
    return 1;
}

/* ---- dispatch ----------------------------------------------------------- */

/* Whether the list holds a variant of that ISA which this CPU runs. */
static int runs_variant_of(const attn_variant *variants, int n, attn_isa isa)
{
    int i;
    for (i = 0; i < n; i++)
        if (variants[i].isa == isa && attn_isa_supported(isa))
            return 1;
    return 0;
}

const attn_variant *attn_pick_variant(const attn_variant *variants, int n)
{
    const char *forced = getenv("ATTNGEN_ISA");
    int i;

    if (variants == NULL || n <= 0)
        return NULL;
    if (forced != NULL && forced[0] != '\0') {
        int isa = attn_isa_from_name(forced);
        if (isa < 0 || !attn_isa_supported((attn_isa)isa))
            return NULL;
        for (i = 0; i < n; i++)
            if ((int)variants[i].isa == isa)
                return &variants[i];
        return NULL; /* known and supported, but not compiled in */
    }
    for (i = 0; i < n; i++) {
        if (!attn_isa_supported(variants[i].isa))
            continue;
        /* bf16 products where they are slower than f32 ones: the avx512
           variant multiplies the same bf16 tensors in f32 */
        if (variants[i].isa == ATTN_ISA_AVX512BF16 && !attn_cpu()->bf16_dot &&
            runs_variant_of(variants, n, ATTN_ISA_AVX512))
            continue;
        return &variants[i];
    }
    return NULL;
}

/* ---- argument checks ---------------------------------------------------- */

#define MAX_EXTENT ((int64_t)1 << 62)

/* *acc += a * b without signed overflow; returns 0 when it would overflow.
   a >= 0 and b >= 0 and *acc >= 0. */
static int add_mul_checked(int64_t *acc, int64_t a, int64_t b)
{
    int64_t prod;
    if (a != 0 && b > INT64_MAX / a)
        return 0;
    prod = a * b;
    if (prod > INT64_MAX - *acc)
        return 0;
    *acc += prod;
    return 1;
}

/*
 * Whether every element offset of a tensor with these extents and element
 * strides fits: the largest offset, sum (extent - 1) * stride, must fit in
 * int64 and, as a byte offset, in ptrdiff_t (so pointer arithmetic on it is
 * defined).  A dim of extent 0 adds nothing, but the other dims still
 * count: a tensor with an empty dim has no elements, yet kernels form
 * offsets along its other dims (a mask's query rows when seq_k is 0).
 * elem_size is the bytes of the tensor's storage type (0, a type outside
 * the list, never fits).
 */
static int span_fits(int ndim, const int64_t *extent, const int64_t *stride,
                     size_t elem_size)
{
    int64_t last = 0;
    int d;
    for (d = 0; d < ndim; d++)
        if (extent[d] > 0 && !add_mul_checked(&last, extent[d] - 1, stride[d]))
            return 0;
    if (elem_size == 0)
        return 0;
    /* the element one past the last must be addressable too */
    if (last == INT64_MAX)
        return 0;
    return (uint64_t)(last + 1) <= (uint64_t)PTRDIFF_MAX / elem_size;
}

static int any_negative(const int64_t *v, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (v[i] < 0)
            return 1;
    return 0;
}

int attn_rel_rows(const attn_spec *spec)
{
    return spec == NULL || spec->family != ATTN_FAMILY_SDPA || spec->rel_bias == ATTN_REL_NONE ? 0 : spec->rel_buckets;
}

/*
 * The first key any of Lq query rows can see when Lk keys are valid, the
 * global keys (j < G) aside, by the rules the kernels classify blocks of
 * keys with: a row at position p sees no key before p - window_left (with a
 * window) or before its chunk's first key (with chunks); a global query row
 * (0 <= p < G) is exempt from both, and a row that sees no key (p < 0 under
 * the causal rule, or outside every chunk) counts for nothing.  Lk when no
 * row sees a key.  A sparse pattern's rows see keys far back: 0.
 */
static int64_t first_key_seen(const attn_spec *spec, int64_t lq, int64_t lk)
{
    int64_t first = lk, i;
    for (i = 0; i < lq; i++) {
        const int64_t p = spec->top_left ? i : i + lk - lq;
        int64_t lo = 0;
        if ((spec->causal || spec->sparse != ATTN_SPARSE_NONE) && p < 0)
            continue;
        if (!(p >= 0 && p < spec->global_tokens) && spec->sparse == ATTN_SPARSE_NONE) {
            if (spec->chunk > 0 && p < 0)
                continue;
            if (spec->window_left >= 0 && p - spec->window_left > lo)
                lo = p - spec->window_left;
            if (spec->chunk > 0 && p / spec->chunk * spec->chunk > lo)
                lo = p / spec->chunk * spec->chunk;
        }
        if (lo < first)
            first = lo;
        if (first == 0)
            break;
    }
    return first;
}

/*
 * A paged config's block table: every page that holds a key j < Lk_b is in
 * 0..num_pages-1, or -1 (evicted) where each of its keys lies before the
 * first key any row sees and is no global key.  Entries past a sequence's
 * last page are not read.
 */
/* The block table's entry for key j of sequence b (the page that holds it), and whether an
   entry names a page of the pools: the one lookup of attn_check_args and attn_check_append. */
static int64_t page_entry(const attn_spec *spec, const attn_args *args, int64_t b, int64_t j)
{
    return args->block_table[b * args->block_table_stride + j / spec->page];
}

static int page_in_pools(const attn_args *args, int64_t page)
{
    return page >= 0 && page < args->num_pages;
}

static attn_status check_block_table(const attn_spec *spec, const attn_args *args)
{
    const int64_t pg = spec->page;
    int64_t b, e;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk = args->seqlens_k[b];
        int64_t first = -1; /* computed at the first -1 entry */
        for (e = 0; e * pg < lk; e++) {
            const int64_t page = page_entry(spec, args, b, e * pg);
            const int64_t j1 = (e + 1) * pg < lk ? (e + 1) * pg : lk; /* the page's keys: [e * pg, j1) */
            if (page_in_pools(args, page))
                continue;
            if (page != -1)
                return ATTN_ERR_PAGE;
            if (first < 0)
                first = first_key_seen(spec, args->seq_q, lk);
            if (e * pg < spec->global_tokens || j1 > first)
                return ATTN_ERR_PAGE;
        }
    }
    return ATTN_OK;
}

/*
 * Note: when batch or seq_q is 0 the kernel reads nothing, but the pointers
 * must still be non-NULL (and seqlens_k, mask, state_s, state_z and rel_table when the
 * config needs them).
 */
/* rope with table = true: rope_cos and rope_sin [rope_rows][rope_dim / 2]
   given, and every query row's position p_i (i + Lk_b - Lq, or i top-left)
   in 0..rope_rows-1. */
static attn_status check_rope_table(const attn_spec *spec, const attn_args *args)
{
    int64_t b;
    if (args->rope_cos == NULL || args->rope_sin == NULL)
        return ATTN_ERR_NULL_ARG;
    if (args->rope_rows < 0)
        return ATTN_ERR_SHAPE;
    if (args->rope_rows > MAX_EXTENT / (spec->rope_dim / 2 + 1))
        return ATTN_ERR_TOO_LARGE;
    if (args->seq_q == 0)
        return ATTN_OK;
    for (b = 0; b < args->batch; b++) {
        const int64_t lk = spec->padding ? args->seqlens_k[b] : args->seq_k;
        const int64_t lo = spec->top_left ? 0 : lk - args->seq_q;
        const int64_t hi = spec->top_left ? args->seq_q - 1 : lk - 1;
        if (lo < 0 || hi >= args->rope_rows)
            return ATTN_ERR_ROPE;
    }
    return ATTN_OK;
}

/* A [B][L][H][n] tensor of elem-byte elements with strides {b, l, h} (and 1)
   fits the index type: the one span check of Q, O, K and V (or K's and V's
   pools) in attn_check_args and of the new rows and the cache in
   attn_check_append. */
static int rows_fit(int64_t b, int64_t l, int64_t h, int64_t n, const int64_t *stride, size_t elem)
{
    const int64_t ext[4] = { b, l, h, n };
    int64_t str[4];
    memcpy(str, stride, 3 * sizeof *str);
    str[3] = 1;
    return span_fits(4, ext, str, elem);
}

/* K and V (V when has_v): [B][Lk][Hkv][D or Dv] in the cache's type, or paged, the pools
   [N][P][Hkv][D or Dv] (strides {page, slot, head}); a block type's rows are D / 32 blocks. */
static int cache_fits(const attn_spec *spec, const attn_args *args, int paged, int has_v)
{
    const int64_t kv_values = attn_dtype_values(spec->dtype_kv) > 0 ? attn_dtype_values(spec->dtype_kv) : 1;
    const int64_t n = paged ? args->num_pages : args->batch, len = paged ? spec->page : args->seq_k;
    /* an unknown type: its size, 0, never fits */
    const size_t ksz = attn_dtype_size(spec->dtype_kv);
    return rows_fit(n, len, spec->heads_kv, spec->head_dim / kv_values, args->k_stride, ksz) &&
           (!has_v || rows_fit(n, len, spec->heads_kv, spec->head_dim_v / kv_values, args->v_stride, ksz));
}

attn_status attn_check_append(const attn_spec *spec, const attn_args *args)
{
    const size_t qsz = spec != NULL ? attn_dtype_size(spec->dtype_q) : 0;
    /* shared_kv: the new rows are K's alone (v_new, v and v_stride are not read) */
    const int has_v = spec == NULL || !spec->shared_kv;
    const int paged = spec != NULL && spec->page > 0;
    int64_t b;
    if (spec == NULL || args == NULL)
        return ATTN_ERR_NULL_ARG;
    if (args->k_new == NULL && (args->v_new == NULL || !has_v))
        return ATTN_OK;
    if (spec->family != ATTN_FAMILY_SDPA || args->k_new == NULL || (has_v && (args->v_new == NULL || args->v == NULL)) ||
        args->k == NULL || args->seqlens_k == NULL || (paged && args->block_table == NULL))
        return ATTN_ERR_NULL_ARG;
    if (args->batch < 0 || args->seq_k < 0 || args->seq_new < 0 || (paged && (args->num_pages < 0 ||
        args->block_table_stride < 0)))
        return ATTN_ERR_SHAPE;
    if (any_negative(args->kn_stride, 3) || any_negative(args->k_stride, 3) ||
        (has_v && (any_negative(args->vn_stride, 3) || any_negative(args->v_stride, 3))))
        return ATTN_ERR_STRIDE;
    if (args->batch > MAX_EXTENT || args->seq_k > MAX_EXTENT || args->seq_new > MAX_EXTENT ||
        (paged && args->num_pages > MAX_EXTENT))
        return ATTN_ERR_TOO_LARGE;
    /* the new rows [B][Ln][Hkv][D or Dv] in Q's type; the cache [B][Lk][Hkv][D or Dv], or its pools
       [N][P][Hkv][D or Dv] */
    if (!rows_fit(args->batch, args->seq_new, spec->heads_kv, spec->head_dim, args->kn_stride, qsz) ||
        (has_v && !rows_fit(args->batch, args->seq_new, spec->heads_kv, spec->head_dim_v, args->vn_stride, qsz)) ||
        !cache_fits(spec, args, paged, has_v))
        return ATTN_ERR_TOO_LARGE;
    for (b = 0; b < args->batch; b++)
        if (args->seqlens_k[b] < 0 || args->seqlens_k[b] > args->seq_k)
            return ATTN_ERR_SEQLENS;
    for (b = 0; b < args->batch; b++)
        if (args->seqlens_k[b] + args->seq_new > args->seq_k)
            return ATTN_ERR_CAPACITY;
    if (paged) /* every new row lands on a page of the pools: never on an evicted (-1) one */
        for (b = 0; b < args->batch; b++) {
            int64_t j;
            for (j = args->seqlens_k[b]; j < args->seqlens_k[b] + args->seq_new; j++)
                if (!page_in_pools(args, page_entry(spec, args, b, j)))
                    return ATTN_ERR_PAGE;
        }
    if (spec->qk_norm && args->seq_new > 0 && args->k_norm_w == NULL)
        return ATTN_ERR_NULL_ARG;
    if (spec->rope_style != ATTN_ROPE_NONE && spec->rope_table && args->seq_new > 0) {
        if (args->rope_cos == NULL || args->rope_sin == NULL)
            return ATTN_ERR_NULL_ARG;
        for (b = 0; b < args->batch; b++)
            if (args->seqlens_k[b] + args->seq_new > args->rope_rows)
                return ATTN_ERR_ROPE;
    }
    return ATTN_OK;
}

attn_status attn_check_args(const attn_spec *spec, const attn_args *args)
{
    /* linear attention: no mask, weights, dropout or LSE (their fields are
       ignored); with spec->state, the state S and z instead */
    const int linear = spec != NULL && spec->family == ATTN_FAMILY_LINEAR;
    const int has_state = linear && spec->state;
    const int has_mask = spec != NULL && !linear && spec->mask != ATTN_MASK_NONE;
    /* P is written only by kernels with weights, and only when asked for */
    const int has_weights = spec != NULL && !linear && spec->weights && args != NULL && args->weights != NULL;
    const int has_lse = !linear && args != NULL && args->lse != NULL;
    /* paged K/V (sdpa): the pools and the block table */
    const int paged = spec != NULL && spec->family == ATTN_FAMILY_SDPA && spec->page > 0;
    /* shared_kv: V is read from K's rows; args->v and v_stride are ignored */
    const int has_v = spec == NULL || linear || !spec->shared_kv;
    int64_t ext[4], str[4];
    int64_t b;

    if (spec == NULL || args == NULL || args->q == NULL || args->k == NULL ||
        (has_v && args->v == NULL) || args->o == NULL)
        return ATTN_ERR_NULL_ARG;
    if (spec->padding && args->seqlens_k == NULL)
        return ATTN_ERR_NULL_ARG;
    if (paged && (args->seqlens_k == NULL || args->block_table == NULL))
        return ATTN_ERR_NULL_ARG;
    if (has_mask && args->mask == NULL)
        return ATTN_ERR_NULL_ARG;
    if (has_state && (args->state_s == NULL || args->state_z == NULL))
        return ATTN_ERR_NULL_ARG;
    if (!linear && spec->sinks && args->sinks == NULL)
        return ATTN_ERR_NULL_ARG;
    if (!linear && spec->rel_bias != ATTN_REL_NONE && args->rel_table == NULL)
        return ATTN_ERR_NULL_ARG;
    if (!linear && spec->qk_norm && args->q_norm_w == NULL)
        return ATTN_ERR_NULL_ARG;

    if (args->batch < 0 || args->seq_q < 0 || args->seq_k < 0)
        return ATTN_ERR_SHAPE;
    if (paged && args->num_pages < 0)
        return ATTN_ERR_SHAPE;
    if (paged && args->block_table_stride < 0)
        return ATTN_ERR_STRIDE;

    if (any_negative(args->q_stride, 3) || any_negative(args->k_stride, 3) ||
        (has_v && any_negative(args->v_stride, 3)) || any_negative(args->o_stride, 3))
        return ATTN_ERR_STRIDE;
    if (has_mask && any_negative(args->mask_stride, 4))
        return ATTN_ERR_STRIDE;
    if (has_weights && any_negative(args->weights_stride, 4))
        return ATTN_ERR_STRIDE;

    if (args->threads < 0)
        return ATTN_ERR_THREADS;
    /* dropout_p: read only by kernels with dropout; NaN fails both tests */
    if (!linear && spec->dropout && !(args->dropout_p >= 0.0f && args->dropout_p < 1.0f))
        return ATTN_ERR_DROPOUT;

    /* Lengths up to 2^62 keep position arithmetic in int64 (i + Lk_b - Lq
       plus or minus a window, rounding up to a tile) even with stride 0. */
    if (args->batch > MAX_EXTENT || args->seq_q > MAX_EXTENT || args->seq_k > MAX_EXTENT)
        return ATTN_ERR_TOO_LARGE;

    /* Q and O: [B][Lq][Hq][D or Dv]; K and V: [B][Lk][Hkv][D or Dv], or paged, the pools
       [N][P][Hkv][D or Dv] (strides {page, slot, head}); a block type's rows: D / 32 blocks */
    if (!rows_fit(args->batch, args->seq_q, spec->heads_q, spec->head_dim, args->q_stride,
                  attn_dtype_size(spec->dtype_q)) ||
        !rows_fit(args->batch, args->seq_q, spec->heads_q, spec->head_dim_v, args->o_stride,
                  attn_dtype_size(spec->dtype_o)) ||
        !cache_fits(spec, args, paged, has_v))
        return ATTN_ERR_TOO_LARGE;

    /* LSE: contiguous [B][Hq][Lq] */
    if (has_lse) {
        ext[0] = args->batch;
        ext[1] = spec->heads_q;
        ext[2] = args->seq_q;
        str[0] = 0;
        if (!add_mul_checked(&str[0], spec->heads_q, args->seq_q))
            return ATTN_ERR_TOO_LARGE;
        str[1] = args->seq_q;
        str[2] = 1;
        if (!span_fits(3, ext, str, sizeof(float)))
            return ATTN_ERR_TOO_LARGE;
    }

    /* mask: [B][Hq][Lq][Lk], uint8 or f32 */
    if (has_mask) {
        ext[0] = args->batch;
        ext[1] = spec->heads_q;
        ext[2] = args->seq_q;
        ext[3] = args->seq_k;
        if (!span_fits(4, ext, args->mask_stride,
                       spec->mask == ATTN_MASK_BOOL ? 1 : sizeof(float)))
            return ATTN_ERR_TOO_LARGE;
    }

    /* weights: [B][Hq][Lq][Lk], f32 */
    if (has_weights) {
        ext[0] = args->batch;
        ext[1] = spec->heads_q;
        ext[2] = args->seq_q;
        ext[3] = args->seq_k;
        if (!span_fits(4, ext, args->weights_stride, sizeof(float)))
            return ATTN_ERR_TOO_LARGE;
    }

    /* the state: contiguous S [B][Hkv][D][Dv] and z [B][Hkv][D], f32 */
    if (has_state) {
        ext[0] = args->batch;
        ext[1] = spec->heads_kv;
        ext[2] = spec->head_dim;
        ext[3] = spec->head_dim_v;
        str[3] = 1;
        str[2] = spec->head_dim_v;
        str[1] = 0;
        str[0] = 0;
        if (!add_mul_checked(&str[1], spec->head_dim, spec->head_dim_v) ||
            !add_mul_checked(&str[0], spec->heads_kv, str[1]) || !span_fits(4, ext, str, sizeof(float)))
            return ATTN_ERR_TOO_LARGE;
    }

    if (spec->padding || paged)
        for (b = 0; b < args->batch; b++)
            if (args->seqlens_k[b] < 0 || args->seqlens_k[b] > args->seq_k)
                return ATTN_ERR_SEQLENS;
    if (!linear && spec->rope_style != ATTN_ROPE_NONE && spec->rope_table) {
        const attn_status st = check_rope_table(spec, args);
        if (st != ATTN_OK)
            return st;
    }
    if (paged)
        return check_block_table(spec, args);
    return ATTN_OK;
}

int attn_args_set_contiguous_pages(attn_args *args, const attn_spec *spec, int32_t *table)
{
    int64_t pg, per, b, e, kv_values;
    if (args == NULL || spec == NULL || table == NULL || spec->family != ATTN_FAMILY_SDPA || spec->page <= 0)
        return ATTN_ERR_NULL_ARG;
    if (args->batch < 0 || args->seq_k < 0)
        return ATTN_ERR_SHAPE;
    pg = spec->page;
    per = (args->seq_k + pg - 1) / pg;
    if (args->batch > 0 && args->seq_k > 0 && (args->batch - 1) * args->seq_k + (per - 1) * pg > INT32_MAX)
        return ATTN_ERR_TOO_LARGE;
    kv_values = attn_dtype_values(spec->dtype_kv) > 0 ? attn_dtype_values(spec->dtype_kv) : 1;
    for (b = 0; b < args->batch; b++)
        for (e = 0; e < per; e++)
            table[b * per + e] = (int32_t)(b * args->seq_k + e * pg);
    args->k_stride[2] = spec->head_dim / kv_values;
    args->k_stride[1] = args->k_stride[0] = (int64_t)spec->heads_kv * (spec->head_dim / kv_values);
    args->v_stride[2] = spec->head_dim_v / kv_values;
    args->v_stride[1] = args->v_stride[0] = (int64_t)spec->heads_kv * (spec->head_dim_v / kv_values);
    args->block_table = table;
    args->block_table_stride = per;
    args->num_pages = args->batch * args->seq_k;
    return ATTN_OK;
}

/* a * b, saturating at INT64_MAX (inputs >= 0); attn_check_args then
   reports ATTN_ERR_TOO_LARGE for a saturated stride. */
static int64_t mul_sat(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return 0;
    if (a != 0 && b > INT64_MAX / a)
        return INT64_MAX;
    return a * b;
}

void attn_args_set_contiguous(attn_args *args, const attn_spec *spec)
{
    const int64_t hq = spec ? spec->heads_q : 0, hkv = spec ? spec->heads_kv : 0;
    const int64_t d = spec ? spec->head_dim : 0, dv = spec ? spec->head_dim_v : 0;
    const int64_t kv_values = spec && attn_dtype_values(spec->dtype_kv) > 0 ? attn_dtype_values(spec->dtype_kv) : 1;
    int64_t lq, lk;

    if (args == NULL || spec == NULL)
        return;
    lq = args->seq_q;
    lk = args->seq_k;

    args->q_stride[2] = d;
    args->q_stride[1] = mul_sat(hq, d);
    args->q_stride[0] = mul_sat(lq, args->q_stride[1]);

    /* K and V in a block type: strides count blocks (D / 32 a row) */
    args->k_stride[2] = d / kv_values;
    args->k_stride[1] = mul_sat(hkv, d / kv_values);
    args->k_stride[0] = mul_sat(lk, args->k_stride[1]);

    args->v_stride[2] = dv / kv_values;
    args->v_stride[1] = mul_sat(hkv, dv / kv_values);
    args->v_stride[0] = mul_sat(lk, args->v_stride[1]);

    /* paged: K and V pools of pages, strides {page, slot, head} */
    if (spec->family == ATTN_FAMILY_SDPA && spec->page > 0) {
        const int64_t pg = spec->page;
        const int hnd = spec->page_order == ATTN_PAGE_HND;
        args->k_stride[1] = hnd ? d / kv_values : mul_sat(hkv, d / kv_values);
        args->k_stride[2] = hnd ? mul_sat(pg, d / kv_values) : d / kv_values;
        args->k_stride[0] = mul_sat(mul_sat(pg, hkv), d / kv_values);
        args->v_stride[1] = hnd ? dv / kv_values : mul_sat(hkv, dv / kv_values);
        args->v_stride[2] = hnd ? mul_sat(pg, dv / kv_values) : dv / kv_values;
        args->v_stride[0] = mul_sat(mul_sat(pg, hkv), dv / kv_values);
    }

    args->o_stride[2] = dv;
    args->o_stride[1] = mul_sat(hq, dv);
    args->o_stride[0] = mul_sat(lq, args->o_stride[1]);

    /* a dense [B][Hq][Lq][Lk] mask */
    args->mask_stride[3] = 1;
    args->mask_stride[2] = lk;
    args->mask_stride[1] = mul_sat(lq, lk);
    args->mask_stride[0] = mul_sat(hq, args->mask_stride[1]);

    /* dense [B][Hq][Lq][Lk] weights */
    args->weights_stride[3] = 1;
    args->weights_stride[2] = lk;
    args->weights_stride[1] = mul_sat(lq, lk);
    args->weights_stride[0] = mul_sat(hq, args->weights_stride[1]);
}

/* ---- the additive and luong families ------------------------------------ */

/*
 * Which parameters a classic spec's score reads.  The family decides for
 * additive whatever spec->score says; a luong spec with a score outside the
 * list reads none (its kernel does not exist, but the check stays defined).
 */
static int classic_additive(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_ADDITIVE;
}

static int classic_concat(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_LUONG && spec->score == ATTN_SCORE_CONCAT;
}

static int classic_general(const attn_spec *spec)
{
    return spec->family == ATTN_FAMILY_LUONG && spec->score == ATTN_SCORE_GENERAL;
}

/* Whether a [B][L][dim] tensor with element strides {b, l} (the last dim
   contiguous) has every offset addressable; see span_fits. */
static int span3_fits(int64_t batch, int64_t len, int64_t dim, const int64_t *stride2, size_t elem_size)
{
    int64_t ext[3], str[3];
    ext[0] = batch;
    ext[1] = len;
    ext[2] = dim;
    str[0] = stride2[0];
    str[1] = stride2[1];
    str[2] = 1;
    return span_fits(3, ext, str, elem_size);
}

/*
 * The same rules as attn_check_args, for attn_classic_args: the pointers the
 * spec's score reads (U replaces W_h for additive when given), then shapes,
 * strides (only of the tensors that are read or written: U when given, A
 * when asked for, the mask with a bool mask), threads, sizes and seqlens_k.
 * The parameters are contiguous and their sizes come from the spec (ints),
 * so they cannot overflow.
 */
attn_status attn_check_classic_args(const attn_spec *spec, const attn_classic_args *args)
{
    int additive, concat, general, has_mask, has_u, has_weights;
    int64_t ext[3], b;

    if (spec == NULL || args == NULL || args->s == NULL || args->h == NULL || args->c == NULL)
        return ATTN_ERR_NULL_ARG;
    additive = classic_additive(spec);
    concat = classic_concat(spec);
    general = classic_general(spec);
    has_mask = spec->mask == ATTN_MASK_BOOL;
    has_u = additive && args->u != NULL;
    has_weights = args->weights != NULL;
    if (additive && (args->w_s == NULL || args->v_attn == NULL || (!has_u && args->w_h == NULL)))
        return ATTN_ERR_NULL_ARG;
    if ((general || concat) && args->w == NULL)
        return ATTN_ERR_NULL_ARG;
    if (concat && args->v_attn == NULL)
        return ATTN_ERR_NULL_ARG;
    if ((additive || concat) && spec->bias && args->b_attn == NULL)
        return ATTN_ERR_NULL_ARG;
    if (spec->padding && args->seqlens_k == NULL)
        return ATTN_ERR_NULL_ARG;
    if (has_mask && args->mask == NULL)
        return ATTN_ERR_NULL_ARG;

    if (args->batch < 0 || args->seq_q < 0 || args->seq_k < 0)
        return ATTN_ERR_SHAPE;

    if (any_negative(args->s_stride, 2) || any_negative(args->h_stride, 2) || any_negative(args->c_stride, 2))
        return ATTN_ERR_STRIDE;
    if (has_u && any_negative(args->u_stride, 2))
        return ATTN_ERR_STRIDE;
    if (has_weights && any_negative(args->weights_stride, 3))
        return ATTN_ERR_STRIDE;
    if (has_mask && any_negative(args->mask_stride, 3))
        return ATTN_ERR_STRIDE;

    if (args->threads < 0)
        return ATTN_ERR_THREADS;

    if (args->batch > MAX_EXTENT || args->seq_q > MAX_EXTENT || args->seq_k > MAX_EXTENT)
        return ATTN_ERR_TOO_LARGE;
    /* S [B][Lq][Ds], H [B][Lk][Dh], U [B][Lk][Da], C [B][Lq][Dh] */
    if (!span3_fits(args->batch, args->seq_q, spec->query_dim, args->s_stride, attn_dtype_size(spec->dtype_q)) ||
        !span3_fits(args->batch, args->seq_k, spec->key_dim, args->h_stride, attn_dtype_size(spec->dtype_kv)) ||
        !span3_fits(args->batch, args->seq_q, spec->key_dim, args->c_stride, attn_dtype_size(spec->dtype_o)))
        return ATTN_ERR_TOO_LARGE;
    if (has_u &&
        !span3_fits(args->batch, args->seq_k, spec->attn_dim, args->u_stride, attn_dtype_size(spec->dtype_kv)))
        return ATTN_ERR_TOO_LARGE;
    /* A [B][Lq][Lk] f32 and the mask [B][Lq][Lk] uint8, every stride free */
    ext[0] = args->batch;
    ext[1] = args->seq_q;
    ext[2] = args->seq_k;
    if (has_weights && !span_fits(3, ext, args->weights_stride, sizeof(float)))
        return ATTN_ERR_TOO_LARGE;
    if (has_mask && !span_fits(3, ext, args->mask_stride, 1))
        return ATTN_ERR_TOO_LARGE;

    if (spec->padding)
        for (b = 0; b < args->batch; b++)
            if (args->seqlens_k[b] < 0 || args->seqlens_k[b] > args->seq_k)
                return ATTN_ERR_SEQLENS;
    return ATTN_OK;
}

void attn_classic_args_set_contiguous(attn_classic_args *args, const attn_spec *spec)
{
    int64_t lq, lk, ds, dh, da;

    if (args == NULL || spec == NULL)
        return;
    lq = args->seq_q;
    lk = args->seq_k;
    ds = spec->query_dim;
    dh = spec->key_dim;
    da = spec->attn_dim;

    args->s_stride[1] = ds;
    args->s_stride[0] = mul_sat(lq, ds);
    args->h_stride[1] = dh;
    args->h_stride[0] = mul_sat(lk, dh);
    args->u_stride[1] = da;
    args->u_stride[0] = mul_sat(lk, da);
    args->c_stride[1] = dh;
    args->c_stride[0] = mul_sat(lq, dh);

    /* dense [B][Lq][Lk] weights and mask */
    args->weights_stride[2] = 1;
    args->weights_stride[1] = lk;
    args->weights_stride[0] = mul_sat(lq, lk);
    args->mask_stride[2] = 1;
    args->mask_stride[1] = lk;
    args->mask_stride[0] = mul_sat(lq, lk);
}

/* ---- allocation hooks --------------------------------------------------- */

/*
 * The default allocator over-allocates with malloc, rounds up to
 * ATTN_ALIGN and keeps malloc's pointer in the slot just before the
 * aligned block, where attn_default_free finds it.
 */
static void *attn_default_alloc(size_t bytes, void *user)
{
    const size_t extra = ATTN_ALIGN - 1 + sizeof(void *);
    unsigned char *raw;
    uintptr_t addr;

    (void)user;
    if (bytes > (size_t)-1 - extra)
        return NULL;
    raw = (unsigned char *)malloc(bytes + extra);
    if (raw == NULL)
        return NULL;
    addr = (uintptr_t)(raw + sizeof(void *));
    addr = (addr + (ATTN_ALIGN - 1)) & ~(uintptr_t)(ATTN_ALIGN - 1);
    memcpy((unsigned char *)addr - sizeof(void *), &raw, sizeof raw);
    return (void *)addr;
}

static void attn_default_free(void *ptr, void *user)
{
    void *raw;
    (void)user;
    if (ptr == NULL)
        return;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    free(raw);
}

static attn_alloc_fn alloc_hook = attn_default_alloc;
static attn_free_fn free_hook = attn_default_free;
static void *hook_user;

/*
 * Installs alloc/release (both, or neither: any NULL restores the
 * defaults).  Not synchronized: call it before the first kernel call.
 */
void attn_set_allocator(attn_alloc_fn alloc, attn_free_fn release, void *user)
{
    if (alloc == NULL || release == NULL) {
        alloc_hook = attn_default_alloc;
        free_hook = attn_default_free;
        hook_user = NULL;
        return;
    }
    alloc_hook = alloc;
    free_hook = release;
    hook_user = user;
}

/* attn_alloc(0) asks the hook for 1 byte: a unique pointer to free later
   (NULL still means out of memory). */
void *attn_alloc(size_t bytes)
{
    return alloc_hook(bytes == 0 ? 1 : bytes, hook_user);
}

/* attn_free(NULL) does nothing. */
void attn_free(void *ptr)
{
    if (ptr != NULL)
        free_hook(ptr, hook_user);
}

/* ---- the backward pass -------------------------------------------------- */

attn_status attn_check_bwd_args(const attn_spec *spec, const attn_bwd_args *args)
{
    attn_status st;
    if (spec == NULL || args == NULL || !spec->backward || spec->family != ATTN_FAMILY_SDPA)
        return ATTN_ERR_NULL_ARG;
    st = attn_check_args(spec, &args->fwd);
    if (st != ATTN_OK)
        return st;
    if (args->fwd.lse == NULL || args->d_o == NULL || args->dq == NULL || args->dk == NULL || args->dv == NULL)
        return ATTN_ERR_NULL_ARG;
    if (any_negative(args->do_stride, 3) || any_negative(args->dq_stride, 3) || any_negative(args->dk_stride, 3) ||
        any_negative(args->dv_stride, 3))
        return ATTN_ERR_STRIDE;
    return ATTN_OK;
}

const attn_bwd_variant *attn_pick_bwd_variant(const attn_bwd_variant *variants, int n)
{
    const char *forced = getenv("ATTNGEN_ISA");
    int i;

    if (variants == NULL || n <= 0)
        return NULL;
    for (i = 0; i < n; i++) {
        if (forced != NULL && forced[0] != '\0') {
            if (attn_isa_from_name(forced) == (int)variants[i].isa && attn_isa_supported(variants[i].isa))
                return &variants[i];
        } else if (attn_isa_supported(variants[i].isa)) {
            return &variants[i];
        }
    }
    return NULL;
}

void attn_bwd_args_set_contiguous(attn_bwd_args *args, const attn_spec *spec)
{
    if (args == NULL || spec == NULL)
        return;
    attn_args_set_contiguous(&args->fwd, spec);
    memcpy(args->do_stride, args->fwd.o_stride, sizeof args->do_stride);
    memcpy(args->dq_stride, args->fwd.q_stride, sizeof args->dq_stride);
    /* dK and dV: element strides of their own types, never blocks */
    args->dk_stride[2] = spec->head_dim;
    args->dk_stride[1] = mul_sat(spec->heads_kv, spec->head_dim);
    args->dk_stride[0] = mul_sat(args->fwd.seq_k, args->dk_stride[1]);
    args->dv_stride[2] = spec->head_dim_v;
    args->dv_stride[1] = mul_sat(spec->heads_kv, spec->head_dim_v);
    args->dv_stride[0] = mul_sat(args->fwd.seq_k, args->dv_stride[1]);
}
