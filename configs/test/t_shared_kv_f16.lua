-- shared_kv over an f16 cache (the K/V storage of llama.cpp's and vLLM's
-- latent caches): V is the first 40 of each K row's 72 values, read as f16
-- and widened in registers, behind f32 queries and output; MQA, causal with
-- padding, small tiles.
return {
  name = "t_shared_kv_f16",
  heads_q = 4,
  heads_kv = 1,
  head_dim = 72,
  head_dim_v = 40,
  shared_kv = true,
  causal = true,
  padding = true,
  dtype = { q = "f32", kv = "f16", o = "f32" },
  tile = { q = 16, kv = 32 },
}
