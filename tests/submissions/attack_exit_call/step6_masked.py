"""Attack: raise a bare BaseException inside the function."""


def masked_attention(Q, K, V, mask):
    raise BaseException("stop grading")
