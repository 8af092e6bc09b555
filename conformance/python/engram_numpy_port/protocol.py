"""The numpy port's side of the protocol (spec/conformance.md §CONF.2, §CONF.6): what a run claims, and each
request answered by the module of its section, through the in-tree adapters' one JSON-lines protocol
(engram_adapter.protocol)."""
from engram_adapter import protocol

from .bugs import chosen, segment_reset
from .config import parse_config
from .fusion import fusion_test
from .hash import accumulate, hash_test, serving_test
from .layout import bounded_integers, build_layout, layout_of, multipliers
from .storage import storage_test
from .token_map import token_lookup_test, token_map_test

SUITES = ["multipliers", "layout", "hash_v41", "hash_demo", "hash_state", "accumulated", "token_map", "fp8_decode",
          "table_lookup", "tp_shard", "gate_v41", "gate_demo", "short_conv_demo", "engram_forward", "serving_v41"]
PROFILES = ["v4.1", "demo-v1"]
# What the port refuses an input with: any other exception is a bug of the port, and ends the run.
REFUSALS = (ValueError, KeyError, TypeError, IndexError, OverflowError)


class Claims:
    """What a run claims in its handshake (a port claims what it implements) and what it answers."""

    def __init__(self, suites=None, profiles=None, unsupported=(), contract=None):
        self.suites = suites or SUITES  # --claim
        self.profiles = profiles or PROFILES  # --profiles
        self.unsupported = set(unsupported)  # --unsupported TYPE: answered "unsupported" (skipped, not failed)
        self.contract = contract  # --contract FILE: the hash contract (spec §CON) of the model this port serves


def run_test(type_, group, test):
    """The outputs of one test (§CONF.1); None for a type the port does not know."""
    for part in (storage_test, fusion_test):
        out = part(type_, group, test)
        if out is not None:
            return out
    if type_ == "TokenMapTest":
        return token_map_test(group, test)
    if type_ == "TokenLookupTest":
        return token_lookup_test(group, test)
    if type_ == "BoundedIntegersTest":
        return {"values": bounded_integers(test["seed"], test["low"], test["high"], test["count"])}
    if type_ == "MultipliersTest":
        return {"multipliers": multipliers(test["seed"], test["layerId"], test["compressedVocabSize"], test["maxNgram"])}
    if type_ == "LayoutTest":
        layout = build_layout(parse_config(test["config"], test.get("profile")), test["compressedVocabSize"],
                              test["compressedPad"])
        return {"layers": layout["layers"]}
    if type_ in ("PackedBatchTest", "DraftTreeTest"):
        return serving_test(type_, group, test)
    return hash_test(type_, group, test)


def handle(req, claims):
    """The answer to one request."""
    op = req.get("op")
    if op == "hello":
        bug, variant = chosen()
        name = "numpy-adapter" + (f" (bug: {bug})" if bug else "") + (f" (variant: {variant})" if variant else "")
        return protocol.hello(name, "1", claims.suites, claims.profiles, ["segment-reset"] if segment_reset() else [])
    try:
        if op == "contract":
            if claims.contract is not None:
                return {"contract": claims.contract}
            return {"contract": None, "layers": layout_of(req)["layers"]}
        if op == "test":
            # "unsupported" is always a safe answer: the runner reports the test skipped, never failed
            # (but a suite in which no valid test passed, or a run that tests nothing, is not OK).
            if req["suite"] not in claims.suites or req["type"] in claims.unsupported:
                return protocol.unsupported(f"{req['type']} of {req['suite']} is not implemented by this adapter run")
            out = run_test(req["type"], req["group"], req["test"])
            return protocol.unsupported(req["type"]) if out is None else protocol.outputs(out)
        if op == "accumulate":
            return {"sha256": accumulate(req["group"], req["n"], req["seed"])}
        if op == "bye":
            return protocol.bye()
        return protocol.unsupported(f"op {op}")
    except REFUSALS as e:
        return protocol.refused(e)
