-- bf16 products (matmul = "bf16", vdpbf16ps where the CPU has it) on odd head dims: D = 59 packs a
-- half-empty last pair, Dv = 40 a partial last vector; GQA, causal, ragged padding, small tiles.
return { name = "t_bf16_dot", heads_q = 4, heads_kv = 2, head_dim = 59, head_dim_v = 40, causal = true,
  padding = true, dtype = "bf16", matmul = "bf16", tile = { q = 24, kv = 32 } }
