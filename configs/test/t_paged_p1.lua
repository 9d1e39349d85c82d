-- A paged bf16 cache of one key a page, head-major pools ([N][Hkv][1][D]), with bf16 products
-- (the prefill packs K^T pairs row by row): MQA, causal, a sliding window whose old pages the
-- cases evict (-1 entries).
return { name = "t_paged_p1", heads_q = 4, heads_kv = 1, head_dim = 40, causal = true, sliding_window = 24,
  dtype = "bf16", matmul = "bf16", paged = { page = 1, order = "HND" } }
