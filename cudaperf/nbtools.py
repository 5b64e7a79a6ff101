"""Write and check the artifact's notebooks with nbformat.

Guarantees:
- `build(cells)` returns a valid nbformat v4 notebook without outputs or execution counts, with
  kernel `python3`; a cell given as ("parameters", source) is tagged `parameters`;
- `write(path, cells)` writes it deterministically (same cells -> same bytes, including cell ids
  derived from the content), so regenerating a notebook makes no spurious diff;
- `problems(path)` lists every way a notebook breaks the artifact's conventions (exactly one
  `parameters` cell, all its names annotated, `profile` declared, no outputs, no execution
  counts); an empty list means it conforms.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence, Union

import nbformat

from cudaperf import params as _params

Cell = Union[str, tuple]  # "code", ("md", text), ("parameters", code)

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def build(cells: Sequence[Cell]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    for i, c in enumerate(cells):
        kind, src = ("code", c) if isinstance(c, str) else c
        src = src.strip("\n")
        if kind == "md":
            cell = nbformat.v4.new_markdown_cell(src)
        elif kind in ("code", "parameters"):
            cell = nbformat.v4.new_code_cell(src)
            if kind == "parameters":
                cell.metadata["tags"] = ["parameters"]
        else:
            raise ValueError(f"unknown cell kind {kind!r}")
        cell["id"] = hashlib.sha1(f"{i}:{src}".encode()).hexdigest()[:12]
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def write(path: str | Path, cells: Sequence[Cell]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(build(cells), str(path))
    return path


def cells_of(path: str | Path) -> list[Cell]:
    """The cell list `write` takes, read back from a notebook (edit it, then `write` again)."""
    nb = nbformat.read(str(path), as_version=4)
    out: list[Cell] = []
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown":
            out.append(("md", c.source))
        elif i in parameters_cells(nb):
            out.append(("parameters", c.source))
        else:
            out.append(c.source)
    return out


def parameters_cells(nb: nbformat.NotebookNode) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]


def problems(path: str | Path) -> list[str]:
    """Every convention the notebook at path breaks (empty list: it conforms)."""
    nb = nbformat.read(str(path), as_version=4)
    out: list[str] = []
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        out.append(f"invalid notebook: {exc.message}")
    pcs = parameters_cells(nb)
    if len(pcs) != 1:
        out.append(f"{len(pcs)} cells tagged 'parameters' (need exactly 1)")
    else:
        cell = nb.cells[pcs[0]]
        if cell.cell_type != "code":
            out.append("the parameters cell is not a code cell")
        else:
            src = cell.source
            bad = _params.unannotated(src)
            if bad:
                out.append(f"parameters without a type annotation: {bad}")
            if "profile" not in _params.declared(src):
                out.append("the parameters cell does not declare `profile: str`")
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            if c.get("outputs"):
                out.append(f"cell {i} has outputs")
            if c.get("execution_count") is not None:
                out.append(f"cell {i} has an execution count")
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        out.append("kernelspec is not python3")
    return out


__all__ = ["KERNELSPEC", "build", "cells_of", "parameters_cells", "problems", "write"]
