-- A paged q8_0 cache of 16 keys a page, head-major pools, behind bf16 Q and
-- O: GQA, causal, head dim 64 (two blocks a row), a sliding window of 40
-- keys whose old pages the cases evict.
return { name = "t_paged_q8", heads_q = 8, heads_kv = 2, head_dim = 64, causal = true, sliding_window = 40,
  dtype = { q = "bf16", kv = "q8_0", o = "bf16" }, paged = { page = 16, order = "HND" } }
