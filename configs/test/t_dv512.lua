-- The largest V head dim (P*V in several chunks), small Q/K head.
return { name = "t_dv512", heads_q = 1, head_dim = 8, head_dim_v = 512 }
