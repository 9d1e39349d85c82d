-- Shaw et al.'s clipped relative positions (distances clamped to [-9, 9]) in a window on both
-- sides, behind an additive bias tensor, with an f16 cache; with the backward pass (the table's
-- gradient: each key tile's window of rows of the clipped table).
return { name = "t_rel_clipped", heads_q = 3, head_dim = 20, window = { left = 20, right = 6 }, mask = "bias",
  dtype = { kv = "f16" }, backward = true, rel_bias = { kind = "clipped", max_distance = 9 } }
