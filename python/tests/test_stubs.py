"""Type stubs ship with the package and cover each module's public names;
help(singa.sonnx.prepare) documents its arguments, results, errors and use."""
import ast
import importlib
import os
import pydoc

import pytest

import singa
from singa import sonnx

MODULES = ["singa", "singa.device", "singa.tensor", "singa.sonnx", "singa.autograd", "singa.layer", "singa.opt",
           "singa.model"]


def _stub_names(path):
    """Top-level names a .pyi defines, assigns, annotates or imports under their own name."""
    names = set()
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname and a.asname == a.name)
    return names


def test_py_typed_marker_is_installed():
    assert os.path.isfile(os.path.join(os.path.dirname(singa.__file__), "py.typed"))


@pytest.mark.parametrize("name", MODULES)
def test_stub_covers_public_names(name):
    mod = importlib.import_module(name)
    path = os.path.splitext(mod.__file__)[0] + ".pyi"
    assert os.path.isfile(path), "no stub installed for %s" % name
    public = getattr(mod, "__all__", None)
    if public is None:  # the functions and classes the module defines itself
        public = [n for n, v in vars(mod).items()
                  if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == name]
    assert public, name
    missing = sorted(set(public) - _stub_names(path))
    assert not missing, "%s.pyi lacks %s" % (name, missing)


def test_help_of_prepare_is_useful():
    text = pydoc.render_doc(sonnx.prepare, renderer=pydoc.plaintext)
    for word in ["Args:", "model", "device", "Returns:", "SingaRep", "Raises:", "InvalidArgumentError", "Example",
                 "rep.run"]:
        assert word in text, word
