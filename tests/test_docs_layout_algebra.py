"""docs/layout_algebra.md cannot rot: its ``>>>`` examples run under doctest and its Python
code blocks are executed (the property-test example is run through hypothesis)."""

import doctest
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "layout_algebra.md")


def test_doctest_examples():
    res = doctest.testfile(DOC, module_relative=False, optionflags=doctest.ELLIPSIS,
                           raise_on_error=False, verbose=False)
    assert res.attempted > 60
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples in {DOC} are out of date"


def test_python_blocks_run():
    text = open(DOC).read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for src in blocks:
        ns: dict = {}
        exec(compile(src, DOC, "exec"), ns)
        for name, fn in ns.items():
            if name.startswith("test_") and callable(fn):
                fn()  # the documented property test passes on generated layouts


@pytest.mark.parametrize("section", ["## Composition", "## Complement", "## Divides",
                                     "## Products", "## Errors", "## Where we follow C++"])
def test_guide_has_section(section):
    assert section in open(DOC).read()
