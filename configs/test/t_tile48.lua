-- A key tile of 48 (three AVX-512 vectors) with a window and bool mask.
return { name = "t_tile48", heads_q = 2, head_dim = 64, window = { left = 30, right = 30 },
  mask = "bool", padding = true, tile = { q = 33, kv = 48 } }
