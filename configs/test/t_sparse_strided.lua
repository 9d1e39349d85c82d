-- Sparse Transformer, strided pattern: a stride of 8, smaller than the tiles (24 x 32), padded
-- batches, GQA with 3 query heads per kv head; causal = false, which the pattern makes causal.
return { name = "t_sparse_strided", heads_q = 6, heads_kv = 2, head_dim = 24,
  sparse = { pattern = "strided", stride = 8 }, padding = true, tile = { q = 24, kv = 32 } }
