-- bf16 products (matmul = "bf16") with D = 128 (K^T pairs packed through the register transpose)
-- under every other mask rule: window, sinks, bool mask, softcap, ALiBi, T5's relative position
-- bias over both directions (8 buckets up to 20: all its regions inside the window); O stored as
-- f32; the pairs packed and run 64 keys at a time (prefill_chunk).
return { name = "t_bf16_dot_masks", heads_q = 4, heads_kv = 1, head_dim = 128, window = { left = 70, right = 9 },
  global_tokens = 3, mask = "bool", softcap = 30.0, alibi = true, dtype = { q = "bf16", kv = "bf16", o = "f32" },
  matmul = "bf16", prefill_chunk = 64, rel_bias = { kind = "t5", buckets = 8, max_distance = 20 } }
