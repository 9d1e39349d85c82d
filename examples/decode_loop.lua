-- The kernel of examples/decode_loop.c: Llama-style attention (GQA, causal, RoPE, neox pairs)
-- over an f16 KV cache of sequences of different lengths (padding), small enough to check each
-- step against a plain loop.
return { name = "decode_loop", heads_q = 8, heads_kv = 2, head_dim = 64, causal = true, padding = true,
  dtype = { q = "f32", kv = "f16", o = "f32" }, rope = { style = "neox", theta = 10000 } }
