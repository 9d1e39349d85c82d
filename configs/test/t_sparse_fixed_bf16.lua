-- Fixed pattern, blocks of 48 keys with 24 summary keys (half the block), bf16 storage, tiles of
-- 16 x 32 that the blocks do not divide, chunks of 96 positions on top, and a bool keep-mask.
return { name = "t_sparse_fixed_bf16", heads_q = 2, head_dim = 16, dtype = "bf16",
  sparse = { pattern = "fixed", block = 48, summary = 24 }, chunk = 96, mask = "bool",
  tile = { q = 16, kv = 32 } }
