-- matmul = "int8" on a q8_0 cache: each query row quantized to q8_0, Q.K as
-- integer block dots, behind f32 Q and bf16 O; causal, GQA (4 query heads a
-- kv head), an additive bias (score terms on every key) and the attention
-- temperature (a factor on the packed rows' block scales), D = 64 (two blocks
-- a row).  The reference computes on the same quantized Q.
return {
  name = "t_q8_0_int8",
  heads_q = 8,
  heads_kv = 2,
  head_dim = 64,
  causal = true,
  mask = "bias",
  temperature = { scale = 0.1, floor = 4 },
  dtype = { kv = "q8_0", o = "bf16" },
  matmul = "int8",
}
