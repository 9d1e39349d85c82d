-- Sparse Transformer, fixed pattern: blocks of 16 keys with one summary key each, smaller than the
-- tiles (24 x 32), 3 global tokens, padded batches, GQA; each row's entropy (its sums carried
-- from the pattern's gathered pass, decode on the blocked path).
return { name = "t_sparse_fixed", heads_q = 4, heads_kv = 2, head_dim = 20, causal = true,
  sparse = { pattern = "fixed", block = 16, summary = 1 }, global_tokens = 3, padding = true,
  tile = { q = 24, kv = 32 }, entropy = true }
