-- Llama-3-8B with a q8_0 KV cache (llama.cpp's blocks of 32 int8 codes and an f16 scale) and f32 Q and
-- O: GQA 32/8, head dim 128, causal.  The kernel reads the blocks in place.
return {
  name = "llama3_8b_q8kv",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  dtype = { q = "f32", kv = "q8_0", o = "f32" },
}
