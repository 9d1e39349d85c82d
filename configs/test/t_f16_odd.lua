-- Every tensor in f16, odd head dims (D != Dv): 16-bit tails on both sides, a bool mask.
return { name = "t_f16_odd", heads_q = 3, head_dim = 59, head_dim_v = 72, mask = "bool", dtype = "f16" }
