-- A paged f16 cache of one key a page, head-major pools ([N][Hkv][1][D]): MQA,
-- causal, a sliding window whose old pages the cases evict (-1 entries).
return { name = "t_paged_p1", heads_q = 4, heads_kv = 1, head_dim = 40, causal = true, sliding_window = 24,
  dtype = { q = "f32", kv = "f16", o = "f32" }, paged = { page = 1, order = "HND" } }
