-- An f16 KV cache with f32 Q and O (llama.cpp's layout): GQA, causal, padding; the streaming decode path;
-- the prefill path packs and runs the keys a tile at a time (prefill_chunk); RoPE in gptj pairs.
return { name = "t_f16_cache", heads_q = 8, heads_kv = 2, head_dim = 64, causal = true, padding = true,
  dtype = { q = "f32", kv = "f16", o = "f32" }, prefill_chunk = 128, rope = { style = "gptj", theta = 500 } }
