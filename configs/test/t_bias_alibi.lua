-- An additive bias tensor and ALiBi with a head count that is not a power of two.
return { name = "t_bias_alibi", heads_q = 6, head_dim = 32, mask = "bias", alibi = true }
