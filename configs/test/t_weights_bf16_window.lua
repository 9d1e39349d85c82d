-- Attention weights with a window, global tokens and softcap, bf16 storage and bf16 products
-- (the weights come from the f32 scores; only P*V rounds them to bf16).
return { name = "t_weights_bf16_window", heads_q = 4, heads_kv = 1, head_dim = 64, window = { left = 40, right = 7 },
  global_tokens = 2, softcap = 30.0, dtype = "bf16", matmul = "bf16", tile = { q = 32, kv = 48 }, weights = true }
