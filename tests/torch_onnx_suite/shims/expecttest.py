"""The part of the `expecttest` package that torch.testing._internal.common_utils imports.

Debian 12 packages torch's test utilities but not expecttest; the torch.onnx suite never
accepts or compares expect files through it, so a plain TestCase is all it needs.
"""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (upstream's name)
        self.assertEqual(str(actual).strip(), str(expect).strip())
