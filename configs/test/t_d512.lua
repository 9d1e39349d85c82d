-- The largest head dim, with a small V head.
return { name = "t_d512", heads_q = 1, head_dim = 512, head_dim_v = 16, causal = true }
