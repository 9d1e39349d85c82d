-- A paged bf16 cache of one key a page, head-major pools ([N][Hkv][1][D]), with bf16 products
-- (the prefill packs K^T pairs row by row): MQA, causal, a sliding window whose old pages the
-- cases evict (-1 entries), and the strided pattern (5), which a paged cache takes on its key
-- tiles.
return { name = "t_paged_p1", heads_q = 4, heads_kv = 1, head_dim = 40, causal = true, sliding_window = 24,
  sparse = { pattern = "strided", stride = 5 }, dtype = "bf16", matmul = "bf16", paged = { page = 1, order = "HND" } }
