import numpy as np
from step3_softmax import softmax


def attention(Q, K, V):
    d_k = Q.shape[-1]
    return softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)) @ V


print(attention(np.eye(2), np.eye(2), np.eye(2)))
