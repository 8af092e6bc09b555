"""What the third-party ports' adapters share, beside the protocol (engram_adapter.protocol): an Adapter base
class and its main(), a loader that runs chosen definitions of a port's own source file, and the identity
token maps handed to a port that maps raw ids itself.

An adapter (conformance/ports/<port>/adapter.py) says which suites and profiles it claims and answers
one test at a time from the port's code in a checkout whose path the user gives (--checkout DIR). It
never edits that code: `load_defs` parses the port's file and executes only the top-level definitions
the adapter names, compiled under the file's own path, so that line numbers in a traceback (and in a
refusal message) are the port's own. That is how a framework module whose other imports (a GPU
kernel package, a distributed runtime, a tokenizer download) are not needed by the Engram code is
measured on a CPU: its Engram definitions run, its imports are stubbed (each adapter's README names
what it stubs).

Answers: an exception the port raises on an input is a refusal (`refused`, with the port's file:line);
`Unsupported` (raised by an adapter for what the port has no way to express, e.g. a per-layer seed the
port does not take) is `unsupported`, reported skipped, with the reason. `PortRefusal` is a refusal the
adapter says for the port, naming the port's file:line (a function that returns None for "no layout", a
check in a constructor the adapter cannot run). Any other exception with no frame in the port's code is the
adapter's own failure: answered as an adapter error, which the runner fails, so that it is never counted as
the port refusing an invalid input.

Run an adapter with conformance/python on PYTHONPATH:
  engram conform --exec "env PYTHONPATH=conformance/python python3 conformance/ports/<port>/adapter.py --checkout DIR"
"""
import __future__
import argparse
import ast
import json
import os
import sys
import traceback
import types

from . import protocol
from .protocol import Unsupported

DEAD = -1


def load_defs(path, names, namespace, future_annotations=False):
    """Execute the top-level definitions (def, class, assignment) named in `names` from the file `path`
    into `namespace` and return it. Only those nodes run: the file's imports do not, so the adapter puts
    what they would have bound (torch, numpy, a stub) into `namespace` first. Line numbers are kept."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, filename=path)
    wanted, found = set(names), set()
    body = []
    for node in tree.body:
        node_names = []
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            node_names = [node.name]
        elif isinstance(node, ast.Assign):
            node_names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            node_names = [node.target.id]
        hit = wanted.intersection(node_names)
        if hit:
            body.append(node)
            found |= hit
    missing = wanted - found
    if missing:
        raise SystemExit(f"{path}: the port's file has no top-level {', '.join(sorted(missing))} "
                         f"(another version of the port? see the adapter's README)")
    flags = __future__.annotations.compiler_flag if future_annotations else 0
    code = compile(ast.Module(body=body, type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
    # a module of its own in sys.modules: dataclasses and pickling look definitions up there
    module = types.ModuleType(f"engram_port_{len(sys.modules)}")
    module.__file__ = path
    sys.modules[module.__name__] = module
    module.__dict__.update(namespace)
    exec(code, module.__dict__)
    return module.__dict__


class PortRefusal(Exception):
    """The port refuses the input, said by the adapter where the port says it by a value or in code the
    adapter cannot run: `at` is the port's 'file:line' (e.g. defined_at(fn, checkout))."""

    def __init__(self, message, at):
        super().__init__(message)
        self.at = at


def defined_at(fn, checkout):
    """'file:line' of a function (or method) run from the port's file: where its `def` is."""
    code = getattr(fn, "__func__", fn).__code__
    return f"{os.path.relpath(code.co_filename, checkout)}:{code.co_firstlineno}"


def line_of(checkout, path, text):
    """'path:line' of the first line of the port's file `path` (relative to the checkout) holding `text`."""
    with open(os.path.join(checkout, path), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return f"{path}:{n}"
    return path


def _engine_sequence(name):
    return Unsupported(f"a rollback or fork of sequence {name!r}, which no append has started: the port keeps one "
                       f"sequence per object and no names, so refusing this is the engine's, not the port's")


def hash_state_test(group, test, new_session, fork=None):
    """protocol.hash_state_test for a port whose sessions the adapter keeps: an unknown sequence is unsupported
    (the port never sees the name), not a refusal the port made."""
    return protocol.hash_state_test(group, test, new_session, fork, unknown_sequence=_engine_sequence)


def replayed_rollback(k, position):
    """A rollback the adapter replays (the port keeps no history to roll back): one past the start is the
    engine's to refuse, so it is unsupported rather than counted as the port's refusal."""
    if not 0 <= k <= position:
        raise Unsupported(f"rollback by {k} at position {position}: the port keeps no history (the adapter "
                          f"replays it), so refusing a rollback past the start is the engine's, not the port's")


_PORT_DATA = set()


def port_data(fn):
    """Marks a function of the adapter's that stands in for the port's own data (IdentityTable.__getitem__: numpy's
    indexing without the array): what it raises counts as raised where the port used it."""
    _PORT_DATA.add(fn.__code__)
    return fn


def _under(path, root):
    return bool(root) and os.path.abspath(path).startswith(os.path.abspath(root) + os.sep)


def where(exc, checkout, own=()):
    """Whose code raised: the innermost frame of the traceback that lies in the checkout (the port) or in one of
    the directories `own` (the adapter's code: its file's directory, engram_adapter), library frames skipped.
    'path:line' (relative to the checkout) where it is the port's; None where it is the adapter's, even when the
    port called it (a callback the adapter hands the port: a reader, a module, a hook) or there is no port frame."""
    at = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        path = frame.f_code.co_filename
        if _under(path, checkout):
            at = f"{os.path.relpath(path, checkout)}:{line}"
        elif frame.f_code not in _PORT_DATA and any(_under(path, d) for d in own):
            at = None
    return at


def adapter_frame(exc):
    """'file:line' of the innermost frame of the traceback in conformance/ (the adapter's code), else the last."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if os.sep + "conformance" + os.sep in os.path.abspath(f.filename)]
    last = (ours or frames or [None])[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno}" if last else None


def rows_of_layer(num_embeddings, i):
    """{"numEmbeddings": n} for layer i of a layout the port built, or {} where the port keeps fewer entries than
    layers (a layout builder that takes engram_num_embeddings as given, unchecked: the port accepted it)."""
    return {"numEmbeddings": int(num_embeddings[i])} if i < len(num_embeddings) else {}


def config_of(group_or_test):
    """The configuration's text part (the HF shape nests it under text_config)."""
    cfg = group_or_test["config"]
    return cfg.get("text_config", cfg)


def as_int_rows(x):
    """A tensor / array / nested tuple of ints as nested lists of Python ints."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [as_int_rows(v) for v in x]
    return int(x)


class Adapter:
    """Subclass per port: set name/suites/profiles, implement answer(suite, type, group, test)
    (return the outputs, or raise Unsupported / any exception for a refusal)."""
    name = "port"
    version = "?"
    suites = []
    profiles = []
    refuse_on = (Exception,)

    def __init__(self, checkout):
        self.checkout = checkout

    def answer(self, suite, type_, group, test):  # pragma: no cover - per port
        raise Unsupported(type_)

    def own_code(self):
        """The directories of the adapter's own code: its class's file's and engram_adapter's."""
        mine = getattr(sys.modules.get(type(self).__module__), "__file__", None)
        return [os.path.dirname(os.path.abspath(__file__))] + ([os.path.dirname(os.path.abspath(mine))] if mine else [])

    def handle(self, req):
        op = req.get("op")
        if op == "hello":
            return protocol.hello(self.name, self.version, self.suites, self.profiles)
        if op == "contract":
            return {"contract": None}
        if op == "bye":
            return protocol.bye()
        if op == "accumulate":
            return protocol.unsupported("accumulated digests (10^3 … 10^7 positions) are not run through this port")
        if op != "test":
            return protocol.unsupported(f"op {op}")
        try:
            out = self.answer(req["suite"], req["type"], req["group"], req["test"])
        except Unsupported as e:
            return protocol.unsupported(e)
        except PortRefusal as e:
            return protocol.refused(e, e.at)
        except self.refuse_on as e:
            at = where(e, self.checkout, self.own_code())
            if at is None:  # raised in the adapter's code (or a library it called), not in the port's
                traceback.print_exc(file=sys.stderr)
                return protocol.adapter_error(e, adapter_frame(e))
            return protocol.refused(e, at)
        return protocol.outputs(out)


def main(adapter_class, description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--checkout", default=os.environ.get("ENGRAM_PORT_CHECKOUT"),
                    help="the port's checkout (or ENGRAM_PORT_CHECKOUT)")
    args = ap.parse_args()
    if not args.checkout or not os.path.isdir(args.checkout):
        print(json.dumps(protocol.start_error(f"no checkout: --checkout {args.checkout!r} is not a directory")),
              flush=True)
        return 2
    try:
        adapter = adapter_class(os.path.abspath(args.checkout))
    except (Exception, SystemExit) as e:  # the port's files are missing or do not load: say why, at hello
        print(json.dumps(protocol.start_error(f"cannot load the port from {args.checkout}: {e}")), flush=True)
        return 2
    return protocol.serve(adapter.handle)


IDENTITY_FULL_MAX = 1 << 22  # V up to this: the whole identity map of V ids is built
IDENTITY_PREFIX_MAX = 1 << 24  # beyond IDENTITY_FULL_MAX, the longest prefix built (128 MiB of int64)


class IdentityTable:
    """np.arange(size) without allocating it (V reaches 2^40 in the multipliers suite), for a port that maps raw
    ids through a numpy table: numpy's indexing, IndexError beyond the end, negative indices from the end."""

    def __init__(self, size):
        self.size = max(size, 0)

    @port_data
    def __getitem__(self, idx):
        import numpy as np  # here, not at the top: portlib itself runs without numpy

        a = np.asarray(idx, dtype=np.int64)
        if np.any((a >= self.size) | (a < -self.size)):
            raise IndexError(f"index out of bounds for axis 0 with size {self.size}")
        out = np.where(a < 0, a + self.size, a)
        return out if out.ndim else out.item()


def test_ids(test):
    """Every id a hash test feeds (HashTest ids, HashStateTest append steps)."""
    if "ids" in test:
        return list(test["ids"])
    return [i for step in test.get("steps", []) for i in step.get("ids", [])]


def identity_len(v, ids, pad):
    """How many entries of the identity token map (raw id c -> compressed id c) the adapter builds. All V
    of them when V is at most IDENTITY_FULL_MAX, so that an id >= V meets the port's own bounds check.
    Beyond that (random layouts draw V up to 2^31: a map of 2^31 int64 is 16 GiB) only the prefix the
    test's ids and the pad index, which gives the same answers for every id < V; a test with an id >= V
    and such a V is unsupported (the port's bounds check would need the whole map)."""
    if v <= IDENTITY_FULL_MAX:
        return max(v, 0)
    need = max([i for i in ids if i >= 0] + [pad]) + 1
    if need > v:
        raise Unsupported(f"an id >= V = {v}: the port's bounds check would need an identity map of {v} ids")
    return need


def identity_map(v, ids, pad):
    """The token map an adapter gives a port that maps raw ids itself: (prefix, raw_pad). The map is the
    identity on raw ids 0 … prefix − 1 (raw id c is compressed id c), followed, when raw_pad == prefix, by one
    entry holding the compressed pad (the raw pad id is then `prefix`). V up to IDENTITY_FULL_MAX: the whole
    identity of V ids, raw pad = pad, so an id >= V meets the port's own bounds check. Beyond (random layouts
    draw V up to 2^31, and the pad is often V - 1): the prefix the test's ids need plus the pad entry, which
    gives the same answers for every id < V; a test with an id >= V, or an id >= IDENTITY_PREFIX_MAX (2^24: the
    prefix is a dense int64 tensor), and such a V is unsupported."""
    if v <= IDENTITY_FULL_MAX:
        return max(v, 0), pad
    if any(i >= v for i in ids):
        raise Unsupported(f"an id >= V = {v}: the port's bounds check would need an identity map of {v} ids")
    need = max([i for i in ids if i >= 0], default=-1) + 1
    if need > IDENTITY_PREFIX_MAX:
        # The map is a dense int64 tensor the port indexes: an id near 2^31 would need gigabytes (the full run of
        # 2026-12-03 crashed or timed out on such cases); a tokenizer's raw ids stay below 2^18.
        raise Unsupported(f"an id of {need - 1} with V = {v}: the port maps raw ids through a dense table, and "
                          f"the adapter's identity prefix of {need} ids would take {8 * need} bytes")
    return need, need


E4M3_ONE = 0x38  # E4M3 1.0 (§STO.1)
E8M0_ONE = 127  # E8M0 2^0 (§STO.2)


def lookup_rows(type_, group, test, table_of, outside):
    """A table_lookup test's rows as (head_dim, [(codes, scales) bytes per row id]): a SyntheticLookupTest's from
    table_of(group["table"]) (the numpy port's generator of the test's input bytes, §STO.5), the others' from the
    test's rowBytes. A row id outside the table is `unsupported`, with `outside` saying why for this port."""
    table = group["table"] if type_ == "SyntheticLookupTest" else group
    d, rows = table["headDim"], table["rows"]
    ids = [int(x) for x in test["rowIds"]]
    if any(not 0 <= r < rows for r in ids):
        raise Unsupported("a row id outside the table: " + outside)
    if type_ == "SyntheticLookupTest":
        codes, scales = table_of(group["table"]).raw(ids)
        return d, [(c.tobytes(), s.tobytes()) for c, s in zip(codes, scales)]
    raw = []
    for rb in test["rowBytes"]:
        b = bytes.fromhex(rb["packed"]) if "packed" in rb else bytes.fromhex(rb["codes"]) + bytes.fromhex(rb["scales"])
        raw.append((b[:d], b[d:d + d // 32]))
    return d, raw


def fp8_decode_by_rows(type_, test, decode_row):
    """An fp8_decode test (§STO.1-§STO.3) answered by a port that decodes only whole table rows: decode_row(codes,
    scales) -> the row's bf16 bit patterns, for 32 E4M3 codes per E8M0 scale. ElementDecodeTest: the 256 codes under
    the test's scale. E4M3DecodeTest: the code under scale 2^0; E8M0DecodeTest: code 1.0 under the scale; the float32
    value is the bf16 one widened, exact for both (an E4M3 value has 3 mantissa bits, 1.0 * 2^k is a power of two)."""
    if type_ == "ElementDecodeTest":
        row = decode_row(bytes(range(256)), bytes([test["scale"]] * 8))
        return {"bf16": "".join(f"{int(b) & 0xFFFF:04x}" for b in row)}
    if type_ == "E4M3DecodeTest":
        row = decode_row(bytes([test["code"]] * 32), bytes([E8M0_ONE]))
    elif type_ == "E8M0DecodeTest":
        row = decode_row(bytes([E4M3_ONE] * 32), bytes([test["scale"]]))
    else:
        raise Unsupported(f"{type_}: not an fp8_decode test")
    return {"f32Bits": f"{(int(row[0]) & 0xFFFF) << 16:08x}"}


def lookup_table(type_, group, test, table_of):
    """A table_lookup test's rows as a table a port can hold: (head_dim, [(codes, scales) bytes per row], local ids).
    The table holds the in-table rows the test reads (a SyntheticLookupTest's distinct ones, in order of first use;
    the others' one per row id, from rowBytes), and `local` is each row id as an index into it. A row id outside the
    table stays outside this one (a negative id as it is, an id at or above the table's rows that far past its end),
    so that the port's own bounds check or mask meets it as it would the real table's."""
    table = group["table"] if type_ == "SyntheticLookupTest" else group
    n = table["rows"]
    ids = [int(x) for x in test["rowIds"]]
    if type_ != "SyntheticLookupTest":
        d, raw = lookup_rows(type_, group, test, None, "a test that gives the rows' bytes has none for it")
        return d, raw, list(range(len(ids)))
    inside = list(dict.fromkeys(r for r in ids if 0 <= r < n)) or [0]  # a table of no rows is no table
    codes, scales = table_of(table).raw(inside)
    at = {r: i for i, r in enumerate(inside)}
    local = [at[r] if 0 <= r < n else (r if r < 0 else len(inside) + r - n) for r in ids]
    return table["headDim"], [(c.tobytes(), s.tobytes()) for c, s in zip(codes, scales)], local
