"""Dataset builder: de-duplication by normalised reference, held-out and in-family splits,
deterministic output files, statistics."""
from __future__ import annotations

import collections
import gzip
import json
import types

import pytest

import cudaperf.families as fam
from cudaperf.devtasks import SAXPY
from cudaperf.tasks import load_tasks

REF_A = """/* scale a vector */
void scale(int n, float a, const float *x, float *y) {
    for (int i = 0; i < n; i++)   // one by one
        y[i] = a * x[i] + expf(x[i]);
}
"""
REF_B = "void axpy_renamed(int len, float alpha, const float *src, float *dst)\n{ for (int k = 0; k < len; k++) dst[k] = alpha*src[k]+expf(src[k]); }"


def test_names_comments_and_layout_do_not_matter():
    assert fam.normalized_reference(REF_A) == fam.normalized_reference(REF_B)
    assert fam.reference_key(REF_A) == fam.reference_key(REF_B)


@pytest.mark.parametrize("change", [
    ("expf", "sinf"),          # a different library function is a different program
    ("a * x[i]", "x[i] * a"),  # operand order is kept (it can change rounding)
    ("float", "double"),       # element type
    ("i++", "i += 2"),         # loop structure
])
def test_real_differences_are_kept(change):
    assert fam.normalized_reference(REF_A) != fam.normalized_reference(REF_A.replace(*change))


def test_names_are_bound_consistently():
    # swapping which name is read and which is written is a different program
    a = "void f(int n, float *x, float *y) { for (int i = 0; i < n; i++) y[i] = x[i]; }"
    b = "void f(int n, float *x, float *y) { for (int i = 0; i < n; i++) x[i] = y[i]; }"
    assert fam.normalized_reference(a) != fam.normalized_reference(b)
    # string and number literals are not identifiers
    assert "_" not in "".join(t for k, t in fam.c_tokens('"abc" 1.5f 0x1F') if k != "id")


def _record(tid, entry, ref):
    r = json.loads(json.dumps(SAXPY))
    r["task_id"], r["entry"], r["reference"] = tid, entry, ref
    return r


def _fake_modules(monkeypatch, spec: dict[str, list[dict]]):
    mods = {}
    for name, recs in spec.items():
        m = types.ModuleType(f"fake_{name}")
        m.FAMILY, m.CATEGORY = name, "map"
        m.generate = (lambda rs: (lambda rng: [json.loads(json.dumps(r)) for r in rs]))(recs)
        mods[name] = m
    monkeypatch.setattr(fam, "family_modules", lambda: mods)
    return mods


def test_build_drops_renamed_duplicates_keeping_the_first(monkeypatch):
    ref_b = REF_B.replace("axpy_renamed", "scale2")
    _fake_modules(monkeypatch, {
        "alpha": [_record("c2cuda/alpha/one", "scale", REF_A),
                  _record("c2cuda/alpha/two", "scale2", ref_b),
                  _record("c2cuda/alpha/three", "scale3", REF_A.replace("scale", "scale3").replace("expf", "sinf"))],
        "beta": [_record("c2cuda/beta/copy", "scale", REF_A.replace("/* scale a vector */", "// same"))],
    })
    tasks, rep = fam.build(seed=0)
    assert [t.task_id for t in tasks] == ["c2cuda/alpha/one", "c2cuda/alpha/three"]
    assert rep.generated == 4 and rep.kept == 2
    assert {d["task_id"]: d["duplicate_of"] for d in rep.duplicates} == {
        "c2cuda/alpha/two": "c2cuda/alpha/one", "c2cuda/beta/copy": "c2cuda/alpha/one"}
    assert rep.duplicates_by_family == {"alpha": 1, "beta": 1}
    assert len(fam.build(seed=0, dedup=False)[0]) == 4


def test_family_splits_are_exact_and_stable():
    names = [f"fam{i:02d}" for i in range(40)]
    s = fam.assign_splits(names)
    c = collections.Counter(s.values())
    assert c == {"test": 6, "val": 4, "train": 30}
    assert fam.assign_splits(reversed(names)) == s
    # adding a family never moves an existing family into or out of training beyond the quota shift
    s2 = fam.assign_splits(names + ["zz_new"])
    assert sum(s[k] != s2[k] for k in names) <= 2


def test_in_family_split_is_seeded_exact_and_local():
    ids = [f"c2cuda/f/t{i}" for i in range(87)]
    a = fam.in_family_split(ids, seed=0)
    assert collections.Counter(a.values()) == {"val": 9, "train": 78}
    assert fam.in_family_split(list(reversed(ids)), seed=0) == a, "order of generation must not matter"
    b = fam.in_family_split(ids, seed=1)
    assert a != b and collections.Counter(b.values()) == {"val": 9, "train": 78}
    # a task's label depends on its id and the seed, not on the other tasks present beyond the count
    c = fam.in_family_split(ids + ["c2cuda/f/extra"], seed=0)
    assert sum(a[k] != c[k] for k in ids) <= 1
    assert fam.in_family_split(["only"], seed=0) == {"only": "train"}


@pytest.fixture(scope="module")
def built():
    return fam.build(seed=0)


def test_real_build_is_split_by_family_with_in_family_labels(built):
    tasks, rep = built
    by_fam = collections.defaultdict(list)
    for t in tasks:
        by_fam[t.family].append(t)
    for name, ts in by_fam.items():
        assert len({t.split for t in ts}) == 1, f"{name} spans splits"
        if ts[0].split == "train":
            labels = collections.Counter(t.meta["in_family_split"] for t in ts)
            assert labels["val"] == max(1, round(0.1 * len(ts))), name
        else:
            assert all("in_family_split" not in t.meta for t in ts)
    keys = [fam.reference_key(t.reference) for t in tasks]
    assert len(set(keys)) == len(keys), "a normalised duplicate survived"
    assert rep.kept == len(tasks) == rep.generated - len(rep.duplicates)


def test_build_is_deterministic_and_written_files_are_byte_identical(built, tmp_path):
    tasks, rep = built
    again, _ = fam.build(seed=0)
    assert [t.to_json() for t in again] == [t.to_json() for t in tasks]
    p1 = fam.write_dataset(tasks, tmp_path / "a.jsonl.gz")
    p2 = fam.write_dataset(again, tmp_path / "b.jsonl.gz")
    assert p1.read_bytes() == p2.read_bytes()
    back = load_tasks(p1)
    assert [t.task_id for t in back] == [t.task_id for t in tasks]
    assert back[0].meta == tasks[0].meta
    with gzip.open(p1, "rt") as fh:
        assert json.loads(fh.readline())["task_id"] == tasks[0].task_id
    other, _ = fam.build(seed=1)
    assert [t.meta.get("in_family_split") for t in other] != [t.meta.get("in_family_split") for t in tasks]


def test_stats_count_everything(built, tmp_path):
    tasks, rep = built
    st = fam.dataset_stats(tasks, rep)
    assert st["tasks"] == len(tasks) == sum(st["by_family"].values()) == sum(st["by_split"].values())
    assert sum(st["by_dtype"].values()) == len(tasks) == sum(st["by_category"].values())
    assert st["dedup"] == {"generated": rep.generated, "kept": rep.kept, "duplicates": len(rep.duplicates),
                           "duplicates_by_family": rep.duplicates_by_family}
    assert json.loads(fam.write_stats(st, tmp_path / "s.json").read_text()) == json.loads(json.dumps(st))
