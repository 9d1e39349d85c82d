/*
 * attn_mask_main.c - prints which keys each query row sees, by the
 * reference's rules (attn_reference_key_visible): the data of `attngen plot
 * mask`.  Built with the runtime, the reference and a one-line unit that
 * defines the spec (attn_mask_spec, from the config's plan; no kernel):
 *
 *   attn_mask SEQ_Q SEQ_K [SEQLEN_K]
 *
 * prints "attn_mask SEQ_Q SEQ_K LK" (LK: the valid keys, SEQLEN_K or SEQ_K)
 * and then one line per query row of SEQ_K characters: '1' visible, '0'
 * hidden, 'p' padding (key at or past LK), 's' visible and gathered: a key
 * of a sparse pattern before the row's dense part, which the prefill path
 * computes on a panel of such keys instead of on the key tiles.  A run-time
 * mask (bool or bias) is not part of the pattern: the spec's mask is taken
 * as none.  Not vendored.  Exit codes: 0, or 2 with one line on stderr for
 * bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"

extern const attn_spec attn_mask_spec;

/* Whether the prefill path gathers the visible key j of the row at position
 * p: a sparse pattern's key before the row's dense part (strided: p - j >= l;
 * fixed: another block than p's), when neither is a global token.  The
 * kernel gathers unless something indexed by a key's position (ALiBi, a mask
 * tensor, the weights, dropout) keeps the pattern on its key tiles. */
static int gathered(const attn_spec *spec, attn_mask_kind mask, int64_t p, int64_t j)
{
    const int64_t g = spec->global_tokens;
    if (spec->sparse == ATTN_SPARSE_NONE || spec->alibi || spec->rel_bias != ATTN_REL_NONE || mask != ATTN_MASK_NONE || spec->weights || spec->dropout)
        return 0;
    if ((p >= 0 && p < g) || j < g)
        return 0;
    if (spec->sparse == ATTN_SPARSE_STRIDED)
        return p - j >= spec->sparse_stride;
    return j / spec->sparse_block != p / spec->sparse_block;
}

static int parse_len(const char *s, long long max, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v > max)
        return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    attn_spec spec = attn_mask_spec;
    const attn_mask_kind mask = spec.mask;
    attn_args args;
    long long lq, lk, lkb;
    int32_t seqlen;
    char *line;
    int64_t i, j;

    if (argc < 3 || argc > 4 || !parse_len(argv[1], 1 << 20, &lq) || !parse_len(argv[2], 1 << 20, &lk)) {
        fprintf(stderr, "usage: attn_mask SEQ_Q SEQ_K [SEQLEN_K] (lengths 0..1048576)\n");
        return 2;
    }
    lkb = lk;
    if (argc == 4 && (!parse_len(argv[3], lk, &lkb) || !spec.padding)) {
        fprintf(stderr, "attn_mask: SEQLEN_K must be in 0..SEQ_K, for a spec with padding\n");
        return 2;
    }
    spec.mask = ATTN_MASK_NONE; /* run-time masks are data, not rules */
    memset(&args, 0, sizeof args);
    args.batch = 1;
    args.seq_q = lq;
    args.seq_k = lk;
    seqlen = (int32_t)lkb;
    args.seqlens_k = &seqlen;
    line = (char *)malloc((size_t)lk + 2);
    if (line == NULL) {
        fprintf(stderr, "attn_mask: out of memory\n");
        return 2;
    }
    printf("attn_mask %lld %lld %lld\n", lq, lk, spec.padding ? lkb : lk);
    for (i = 0; i < lq; i++) {
        for (j = 0; j < lk; j++) {
            if (spec.padding && j >= lkb)
                line[j] = 'p';
            else if (!attn_reference_key_visible(&spec, &args, 0, 0, i, j))
                line[j] = '0';
            else
                line[j] = gathered(&spec, mask, spec.top_left ? i : i + lkb - lq, j) ? 's' : '1';
        }
        line[lk] = '\n';
        fwrite(line, 1, (size_t)lk + 1, stdout);
    }
    free(line);
    return fflush(stdout) == 0 ? 0 : 2;
}
