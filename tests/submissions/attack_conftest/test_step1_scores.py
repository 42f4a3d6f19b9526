"""Attack: a test file named like a hidden suite, with a test that always passes."""

import pytest

pytestmark = pytest.mark.step("step1")


def test_everything_is_fine(step):
    """ATTN-ATTACK: everything is fine"""
