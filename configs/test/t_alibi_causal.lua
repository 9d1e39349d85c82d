-- ALiBi with 12 heads (8 + 4 interleaved slopes), causal, custom scale.
return { name = "t_alibi_causal", heads_q = 12, head_dim = 8, alibi = true, causal = true, scale = 0.3 }
