"""Wrong implementations of the mistakes that behavioural probes find (issue 39).

GPT-style code carries a causal mask into steps where the task asked for none,
and a step 6 may never use its `mask`. Each function here is self-contained
(only `np` and `math`), like those of `mistakes.py`, which catalogues them:
its source is a complete learner file once the `def` line is renamed.
"""

from __future__ import annotations

import math

import numpy as np


def attention__causal_mask_hardcoded(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    T, S = scores.shape[-2], scores.shape[-1]
    scores = np.where(np.tril(np.ones((T, S), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def masked_attention__causal_mask_and_mask(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    causal = np.tril(np.ones(scores.shape[-2:], dtype=bool))
    scores = np.where(np.asarray(mask, dtype=bool) & causal, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def masked_attention__mask_ignored(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def self_attention__causal_mask_hardcoded(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    T = Z.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
    scores = scores + np.triu(np.full((T, T), -1e9), k=1)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def multi_head_attention__causal_mask_hardcoded(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    T, d_model = Z.shape[-2], Z.shape[-1]
    d_h = d_model // n_heads
    lead = Z.shape[:-2]

    def split(X):
        return np.swapaxes(X.reshape(lead + (T, n_heads, d_h)), -2, -3)

    q, k, v = split(Z @ W_q), split(Z @ W_k), split(Z @ W_v)
    att = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_h)
    att = np.where(np.tril(np.ones((T, T), dtype=bool)), att, -np.inf)
    e = np.exp(att - np.max(att, axis=-1, keepdims=True))
    y = e / np.sum(e, axis=-1, keepdims=True) @ v
    return np.swapaxes(y, -2, -3).reshape(lead + (T, d_model)) @ W_o


def masked_attention__pair__mask_ignored__transpose_all_axes(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ K.T / math.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def self_attention__pair__causal_mask_hardcoded__no_scale(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    T = Z.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V
