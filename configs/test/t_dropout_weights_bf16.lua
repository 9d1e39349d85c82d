-- Dropout with the attention weights written (the weights after dropout): t_weights_bf16_window with
-- dropout = true (at dropout_p = 0 the two agree bit for bit), bf16 storage and bf16 products; and
-- each row's entropy (before dropout).
return { name = "t_dropout_weights_bf16", heads_q = 4, heads_kv = 1, head_dim = 64, window = { left = 40, right = 7 },
  global_tokens = 2, softcap = 30.0, dtype = "bf16", matmul = "bf16", tile = { q = 32, kv = 48 }, weights = true,
  dropout = true, entropy = true }
