"""What the runner sends for a test (§CONF.1: the group without `tests`; the test split at `result`, meta keys
and informative outputs dropped, the nested outputs of step lists stripped) and the answer that passes it."""
from porting.base import META
from porting.schema_model import MODEL


def informative(type_, key):
    return key == "error" or any(k.name == key and k.role == "informative" for k in MODEL[type_]["keys"])


def nested_lists(type_):
    """§CONF.1 nested outputs: list key → (output field names, two levels)."""
    out = {}
    for k in MODEL[type_]["keys"]:
        if k.fields and k.role == "input":
            outs = [f.name for f in k.fields if f.role == "output"]
            if outs:
                out[k.name] = (outs, k.shape.count("[") == 2)
    return out


def split(type_, test):
    """What the runner sends (inputs) and compares (expected) for one test: §CONF.1, as
    vectors/compare.cc SplitOrdered does it."""
    inputs, expected = {}, {}
    after = False
    nested = nested_lists(type_)
    for key, value in test.items():
        if key == "result":
            after = True
            continue
        if key in META or informative(type_, key):
            continue
        if key in nested:
            outs, two = nested[key]
            strip = lambda e: {k: w for k, w in e.items() if k not in outs}  # noqa: E731
            inputs[key] = [[strip(e) for e in el] for el in value] if two else [strip(e) for e in value]
            if test.get("result") == "valid":
                expected[key] = value
            continue
        (expected if after else inputs)[key] = value
    return inputs, expected


def group_sent(group):
    return {k: w for k, w in group.items() if k != "tests"}


def request(suite, type_, group, test):
    if MODEL[type_].get("op") == "accumulate":
        return {"op": "accumulate", "kind": test["kind"], "group": group_sent(group), "n": test["n"], "seed": test["seed"]}
    return {"op": "test", "suite": suite, "type": type_, "tcId": test["tcId"], "group": group_sent(group),
            "test": split(type_, test)[0]}


def passing_answer(type_, group, test):
    """The answer that passes a test, in the documented form."""
    if test["result"] != "valid":
        return {"refused": test.get("error", "a message naming the field and the value (§GEN.4)")}
    if MODEL[type_].get("op") == "accumulate":
        return {"sha256": test["sha256"]}
    tol = group.get("tolerance", {})
    keys = {k.name: k for k in MODEL[type_]["keys"] if k.role != "group"}
    out = {}
    for name, value in split(type_, test)[1].items():
        k = keys[name]
        if k.role != "output" and not (k.role == "input" and k.fields):
            continue
        if k.role == "input" and k.fields:  # a step list: per element its outputs
            outs = [f.name for f in k.fields if f.role == "output"]
            pick = lambda e: {f: e[f] for f in outs if f in e}  # noqa: E731
            out[name] = [[pick(e) for e in el] for el in value] if k.shape.count("[") == 2 else [pick(e) for e in value]
        elif name in tol and "k" in tol[name]:
            out[name] = value["float64"]  # your own value(s) in the shape of the float64 reference
        else:
            out[name] = value
    return {"outputs": out}
