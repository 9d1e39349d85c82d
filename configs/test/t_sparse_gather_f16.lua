-- Strided pattern on the gathered path from an f16 cache (Q and O f32): a stride of 4, so that at
-- 113 rows a residue's rows fill more than one query tile and its keys more than one packed
-- panel; MQA with 4 query heads, top-left positions, tiles of 16 x 32.
return { name = "t_sparse_gather_f16", heads_q = 4, heads_kv = 1, head_dim = 24,
  dtype = { q = "f32", kv = "f16", o = "f32" }, causal = "top_left",
  sparse = { pattern = "strided", stride = 4 }, tile = { q = 16, kv = 32 } }
