"""wrong_transpose_all_axes__softmax_wrong_axis_class: class-based (a layer object with a forward method and a static softmax): K.T and axis=1.
Expected diagnosis: transpose-all-axes, softmax-wrong-axis
"""

import numpy as np


class ScaledDotProductAttention:
    def __init__(self, d_k):
        self.scale = 1.0 / np.sqrt(d_k)

    @staticmethod
    def softmax(x):
        exp_x = np.exp(x - np.max(x, axis=1, keepdims=True))
        return exp_x / np.sum(exp_x, axis=1, keepdims=True)

    def forward(self, Q, K, V):
        self.scores = np.matmul(Q, K.T) * self.scale
        self.weights = self.softmax(self.scores)
        return np.matmul(self.weights, V)


def attention(Q, K, V):
    return ScaledDotProductAttention(Q.shape[-1]).forward(Q, K, V)
