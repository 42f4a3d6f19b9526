"""LTI 1.3: the hosted class as a tool an LMS launches (CONTRACT §8)."""
