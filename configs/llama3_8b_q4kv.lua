-- Llama-3-8B with a q4_0 KV cache (llama.cpp's blocks of 32 4-bit codes and an f16 scale) and f32 Q and
-- O: GQA 32/8, head dim 128, causal.  The kernel reads the blocks in place.
return {
  name = "llama3_8b_q4kv",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  dtype = { q = "f32", kv = "q4_0", o = "f32" },
}
