-- Two-sided window, global tokens and padding (Longformer-like), odd head dim.
return { name = "t_longformer_padded", heads_q = 2, head_dim = 24, window = { left = 4, right = 4 },
  global_tokens = 2, padding = true }
