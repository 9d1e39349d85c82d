-- Fixed pattern on the gathered path with pair products: blocks of 16 keys with 8 summary keys
-- (fewer than a packed panel's keys, and several panels of them at 113 keys), all-bf16 storage
-- with matmul = "bf16", 2 global tokens, padded batches, GQA, tiles of 16 x 32.
return { name = "t_sparse_gather_dp", heads_q = 4, heads_kv = 2, head_dim = 32, dtype = "bf16", matmul = "bf16",
  sparse = { pattern = "fixed", block = 16, summary = 8 }, global_tokens = 2, padding = true,
  tile = { q = 16, kv = 32 } }
