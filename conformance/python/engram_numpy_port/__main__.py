"""`python -m engram_numpy_port [--bug NAME] [--variant NAME] [--claim SUITE ...] ...`: the numpy port as a
JSON-lines adapter on stdin / stdout (the options: `--help`, or the package's docstring)."""
import argparse
import json
import os
import re
import sys

from engram_adapter import protocol

import engram_numpy_port

from .bugs import BUGS, CONTROL_BUGS, RANDOM_ONLY_BUGS, VARIANTS, configure
from .protocol import PROFILES, SUITES, Claims, handle


SCHEMAS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "vectors", "schema"))


def schema_test_types():
    """The test types the vector schemas name (a name that is no type would answer nothing unsupported, silently);
    empty where the package runs outside the repository."""
    if not os.path.isdir(SCHEMAS):
        return set()
    names = set()
    for name in os.listdir(SCHEMAS):
        with open(os.path.join(SCHEMAS, name), encoding="utf-8") as f:
            names.update(re.findall(r'"([A-Z][A-Za-z0-9]*Test)"', f.read()))
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m engram_numpy_port", description=engram_numpy_port.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bug", choices=list(BUGS) + list(RANDOM_ONLY_BUGS) + list(CONTROL_BUGS))
    ap.add_argument("--variant", choices=list(VARIANTS))
    ap.add_argument("--list-bugs", action="store_true", help="print {bug: flag} as JSON and exit")
    ap.add_argument("--list-random-bugs", action="store_true",
                    help="print {bug: what it does} for the bugs only the random cases find, as JSON, and exit")
    ap.add_argument("--claim", nargs="+", choices=SUITES, metavar="SUITE",
                    help="claim only these suites in the handshake (the others are skipped as not claimed)")
    ap.add_argument("--profiles", nargs="+", choices=PROFILES,
                    help="claim only these profiles (the other profile's tests are skipped, in every suite)")
    ap.add_argument("--unsupported", nargs="+", default=[], metavar="TYPE",
                    help='answer {"unsupported": ...} to these test types (e.g. FloatLookupTest; several: spaces or '
                         'commas): skipped, not failed')
    ap.add_argument("--contract", help="report this hash contract (e.g. written by `engram contract`)")
    ap.add_argument("--segment-reset", action="store_true",
                    help="declare the policy feature segment-reset (§HASH.12) and reset where a position restarts at 0")
    args = ap.parse_args(argv)
    args.unsupported = [t for arg in args.unsupported for t in arg.split(",") if t]
    known = schema_test_types()
    if args.unsupported and not known:
        print(f"note: no vector schemas at {SCHEMAS}: --unsupported names are not checked", file=sys.stderr)
    unknown = [t for t in args.unsupported if known and t not in known]
    if unknown:
        ap.error(f"--unsupported: {', '.join(unknown)}: not a test type of the vector schemas "
                 f"({os.path.relpath(SCHEMAS)}); the types: {', '.join(sorted(known))}")
    if args.list_bugs:
        print(json.dumps(BUGS))
        return 0
    if args.list_random_bugs:
        print(json.dumps(RANDOM_ONLY_BUGS))
        return 0
    configure(args.bug, args.variant, args.segment_reset)
    contract = None
    if args.contract:
        with open(args.contract, encoding="utf-8") as f:
            contract = json.load(f)
    claims = Claims(args.claim, args.profiles, args.unsupported, contract)
    return protocol.serve(lambda req: handle(req, claims))


if __name__ == "__main__":
    sys.exit(main())
