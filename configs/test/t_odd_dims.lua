-- Odd head dims, D != Dv, no mask: vector tails on both sides.
return { name = "t_odd_dims", heads_q = 3, head_dim = 59, head_dim_v = 72 }
