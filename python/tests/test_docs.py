"""Every docstring example of the package runs (torch/jax ones only when installed)."""

import doctest
import importlib

import pytest

MODULES = ["fprev", "fprev.exact", "fprev._dtypes", "fprev._model"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module) if t.examples]
    assert tests, f"{name} has no examples"
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"


def test_every_public_function_has_an_example():
    import fprev

    for name in ["reveal", "reveal_dot", "reveal_matmul"]:
        assert ">>>" in getattr(fprev, name).__doc__, name
    for name in ["parse", "diff", "replay", "to_dot", "to_json", "to_svg", "stats"]:
        assert ">>>" in getattr(fprev.Tree, name).__doc__, name
    for name in ["sum", "dot"]:
        assert ">>>" in getattr(fprev.exact, name).__doc__, name


@pytest.mark.parametrize("name,framework", [("fprev.torch", "torch"), ("fprev.jax", "jax")])
def test_framework_examples(name, framework):
    pytest.importorskip(framework, reason=f"{framework} is not installed")
    test_docstring_examples(name)
