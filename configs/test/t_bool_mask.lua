-- A run-time boolean keep-mask on top of a causal mask.
return { name = "t_bool_mask", heads_q = 2, head_dim = 20, causal = true, mask = "bool" }
