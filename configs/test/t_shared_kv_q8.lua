-- shared_kv on llama.cpp's q8_0 blocks: V is the first 2 of each K row's 3
-- blocks (D = 96, Dv = 64), MQA (4 query heads on one kv head), causal,
-- padding, behind f16 queries and output.
return {
  name = "t_shared_kv_q8",
  heads_q = 4,
  heads_kv = 1,
  head_dim = 96,
  head_dim_v = 64,
  shared_kv = true,
  causal = true,
  padding = true,
  dtype = { q = "f16", kv = "q8_0", o = "f16" },
}
