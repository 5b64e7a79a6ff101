"""cudaperf.params: unknown notebook parameters are rejected, declared ones are type-checked."""
from __future__ import annotations

import pytest

from cudaperf import nbtools, params


def _ns(params_src: str, injected: str = "") -> tuple[dict, set]:
    """Mimic a kernel: first cell, parameters cell, papermill's injected cell."""
    ns: dict = {"__name__": "__main__"}
    exec("import os\n", ns)
    ns0 = set(ns)
    exec(params_src, ns)
    if injected:
        exec(injected, ns)
    return ns, ns0


SRC = 'profile: str = "smoke"  # smoke | mini | paper\nn: int = 3\nlr: float = 0.5\nflag: bool = False\n'


def test_declared_parameters_returned_in_order():
    ns, ns0 = _ns(SRC)
    assert list(params.check(ns, ns0).items()) == [
        ("profile", "smoke"), ("n", 3), ("lr", 0.5), ("flag", False)]


def test_unknown_injected_name_rejected_listing_declared():
    ns, ns0 = _ns(SRC, 'profle = "mini"\n')
    with pytest.raises(ValueError) as exc:
        params.check(ns, ns0)
    msg = str(exc.value)
    assert "profle" in msg and "['flag', 'lr', 'n', 'profile']" in msg


def test_known_injected_values_override_and_coerce():
    ns, ns0 = _ns(SRC, 'profile = "mini"\nlr = 2\nn = 10\nflag = True\n')
    p = params.check(ns, ns0)
    assert p == {"profile": "mini", "n": 10, "lr": 2.0, "flag": True}
    assert isinstance(p["lr"], float)


@pytest.mark.parametrize("injected, name", [
    ('flag = "true"\n', "flag"),   # a string is not a bool
    ("n = 2.5\n", "n"),            # a float is not an int
    ("n = True\n", "n"),           # nor is a bool
    ('lr = "0.1"\n', "lr"),        # a str is not a number
    ("profile = 3\n", "profile"),
])
def test_wrong_types_rejected(injected, name):
    ns, ns0 = _ns(SRC, injected)
    with pytest.raises(TypeError, match=repr(name)):
        params.check(ns, ns0)


def test_optional_and_containers():
    ns, ns0 = _ns('seed: "int | None" = None\nfams: tuple = ()\n', "fams = ['a', 'b']\n")
    assert params.check(ns, ns0) == {"seed": None, "fams": ("a", "b")}
    ns, ns0 = _ns('seed: "int | None" = None\n', 'seed = "x"\n')
    with pytest.raises(TypeError, match="seed"):
        params.check(ns, ns0)


def test_rerunning_first_cell_keeps_parameters():
    ns, _ = _ns(SRC)
    assert params.check(ns, set(ns))["n"] == 3  # JupyterLab: cell 1 re-run after the rest


def test_source_inspection():
    assert params.declared(SRC) == {"profile": "str", "n": "int", "lr": "float", "flag": "bool"}
    assert params.unannotated("a: int = 1\nb = 2\nc += 1\n") == ["b", "c"]


@pytest.fixture(scope="module")
def tiny_notebook(tmp_path_factory):
    path = tmp_path_factory.mktemp("nb") / "tiny.ipynb"
    nbtools.write(path, [
        "import cudaperf.params\n_ns0 = set(globals())",
        ("parameters", 'profile: str = "smoke"  # smoke | mini | paper\nsteps: int = 2  # steps'),
        "P = cudaperf.params.check(globals(), _ns0)\nprint('steps', P['steps'])",
    ])
    return path


def test_papermill_unknown_parameter_fails_with_clear_error(tiny_notebook, tmp_path):
    import papermill
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as exc:
        papermill.execute_notebook(str(tiny_notebook), str(tmp_path / "out.ipynb"),
                                   parameters={"stpes": 5}, progress_bar=False,
                                   kernel_name="python3")
    assert exc.value.ename == "ValueError"
    assert "unknown notebook parameter(s) ['stpes']" in exc.value.evalue
    assert "['profile', 'steps']" in exc.value.evalue
    # and a correct name goes through, typed
    papermill.execute_notebook(str(tiny_notebook), str(tmp_path / "ok.ipynb"),
                               parameters={"steps": 5}, progress_bar=False, kernel_name="python3")
    assert "steps 5" in (tmp_path / "ok.ipynb").read_text()
