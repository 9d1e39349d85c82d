-- Head dim 3, GQA 4/2, causal.
return { name = "t_d3_gqa_causal", heads_q = 4, heads_kv = 2, head_dim = 3, causal = true }
