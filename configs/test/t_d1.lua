-- Head dim 1: the smallest shape.
return { name = "t_d1", heads_q = 2, head_dim = 1 }
