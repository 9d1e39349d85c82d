-- The kernel of examples/decode_loop.c: Llama-style attention (GQA, causal, RoPE, neox pairs)
-- over a paged f16 KV cache (pages of 16 keys, as vLLM keeps them) shared by sequences of
-- different lengths, small enough to check each step against a plain loop.
return { name = "decode_loop", heads_q = 8, heads_kv = 2, head_dim = 64, causal = true,
  dtype = { q = "f32", kv = "f16", o = "f32" }, rope = { style = "neox", theta = 10000 },
  paged = { page = 16, order = "NHD" } }
