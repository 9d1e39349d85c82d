-- Llama-3-8B with an f16 KV cache and f32 Q and O (llama.cpp's default cache type): GQA 32/8, head dim 128, causal.
return {
  name = "llama3_8b_f16kv",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  dtype = { q = "f32", kv = "f16", o = "f32" },
}
