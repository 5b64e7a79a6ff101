"""Notebook parameters: typed, declared once, unknown names rejected.

Convention for every notebook (papermill only *warns* about unknown -p names and then injects
them anyway, so a typo like ``-p profle mini`` would silently run the default):

    # cell 1 (imports)            import cudaperf.params ...; _ns0 = set(globals())
    # cell 2 (tagged parameters)  profile: str = "smoke"  # smoke | mini | paper
    # cell 3                      P = cudaperf.params.check(globals(), _ns0)

Guarantees of `check`:
- every global that appeared after `_ns0` must be declared with a type annotation in the
  parameters cell; otherwise ValueError naming the offending names and listing the declared ones
  (papermill's injected cell assigns without annotations, so an unknown -p name lands here);
- every declared value is checked against its annotation and coerced only where it is lossless
  and unambiguous (int -> float, and None for Optional); a str for a bool, a float for an int or
  a str for a number raise TypeError naming the parameter;
- returns {name: value} of the declared parameters in declaration order.
"""
from __future__ import annotations

import ast
import types
import typing
from typing import Any, Iterable

_NOT_PARAMS = frozenset({"In", "Out", "_", "__", "___", "exit", "quit", "get_ipython"})


def _ipython_noise(name: str) -> bool:
    # IPython creates _1, _i2, _ii, _oh ... as cells run; they are never parameters.
    return name in _NOT_PARAMS or name.startswith("_")


def _resolve(annotation: Any) -> Any:
    """Annotations are strings under `from __future__ import annotations`; evaluate simple ones."""
    if not isinstance(annotation, str):
        return annotation
    if annotation[:1] in "'\"":  # a quoted annotation under postponed evaluation
        annotation = ast.literal_eval(annotation)
    env = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict,
           "tuple": tuple, "None": None, "typing": typing, "Optional": typing.Optional,
           "Any": typing.Any}
    try:
        return eval(annotation, env)  # noqa: S307 - annotations written by the notebook author
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"unsupported parameter annotation {annotation!r}: {exc}") from None


def _check_value(name: str, value: Any, ann: Any) -> Any:
    ann = _resolve(ann)
    if ann is Any or ann is typing.Any:
        return value
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        for alt in typing.get_args(ann):
            if alt is type(None):
                if value is None:
                    return None
                continue
            try:
                return _check_value(name, value, alt)
            except TypeError:
                continue
        raise TypeError(f"parameter {name!r} = {value!r} matches none of {ann}")
    base = origin or ann
    if base is bool:
        if isinstance(value, bool):
            return value
    elif base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif base is str:
        if isinstance(value, str):
            return value
    elif base in (list, tuple, dict):
        if isinstance(value, base):
            return value
        if base is tuple and isinstance(value, list):  # papermill/YAML have no tuples
            return tuple(value)
    elif isinstance(base, type):
        if isinstance(value, base):
            return value
    else:
        raise TypeError(f"parameter {name!r}: unsupported annotation {ann!r}")
    raise TypeError(f"parameter {name!r} must be {getattr(base, '__name__', base)}, "
                    f"got {type(value).__name__} {value!r}")


def check(ns: dict[str, Any], ns0: Iterable[str]) -> dict[str, Any]:
    """Validate the notebook's parameters; see the module docstring."""
    before = set(ns0)
    annotations: dict[str, Any] = dict(ns.get("__annotations__", {}))
    # All annotations, not only new ones: re-running the first cell in JupyterLab puts the
    # parameters into ns0 and they must still be returned.
    declared = list(annotations)
    new = [n for n in ns if n not in before and not _ipython_noise(n)]
    unknown = sorted(n for n in new if n not in annotations)
    if unknown:
        raise ValueError(
            f"unknown notebook parameter(s) {unknown}; this notebook declares "
            f"{sorted(declared)} (check the spelling of -p names)")
    missing = [n for n in declared if n not in ns]
    if missing:
        raise ValueError(f"parameter(s) {missing} are annotated but have no value")
    return {n: _check_value(n, ns[n], annotations[n]) for n in declared}


def declared(source: str) -> dict[str, str]:
    """{name: annotation source} of the annotated assignments in a parameters cell's source."""
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ast.unparse(node.annotation)
    return out


def unannotated(source: str) -> list[str]:
    """Names a parameters cell assigns without an annotation (the convention forbids them)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                names.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AugAssign,)) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


__all__ = ["check", "declared", "unannotated"]
