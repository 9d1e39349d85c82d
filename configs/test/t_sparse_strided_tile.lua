-- Strided pattern with a stride as large as the key tiles (16 x 32), top-left causal, 2 global
-- tokens exempt from it.
return { name = "t_sparse_strided_tile", heads_q = 2, head_dim = 16, causal = "top_left",
  sparse = { pattern = "strided", stride = 32 }, global_tokens = 2, tile = { q = 16, kv = 32 } }
