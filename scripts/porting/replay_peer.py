"""porting_doc.py --replay: a JSON-lines adapter answering every test with the answer the reference calls
passing, after checking that the request is the one it says the runner sends."""
import json
import sys

from porting.protocol import passing_answer, request
from porting.render import line


def replay(vectors):
    """A JSON-lines adapter answering every request with passing_answer(), after checking that the
    request is request() of that test."""
    tests, accs, layouts = {}, {}, {}
    for suite, doc in vectors.items():
        for g in doc["testGroups"]:
            if "layers" in g and "config" in g:
                layouts[line([g["profile"], g["config"], g["compressedVocabSize"], g["compressedPad"]], False)] = g["layers"]
            for t in g["tests"]:
                if suite == "accumulated":
                    accs[line(request(suite, g["type"], g, t), False)] = (g, t)
                else:
                    tests[(suite, t["tcId"])] = (g, t)
    out = sys.stdout
    for raw in sys.stdin:
        req = json.loads(raw)
        op = req.get("op")
        if op == "hello":
            ans = {"protocol": 1, "name": "porting_doc.py --replay", "version": "1", "suites": ["*"],
                   "profiles": ["*"], "features": []}
        elif op == "contract":
            key = line([req["profile"], req["config"], req["compressedVocabSize"], req["compressedPad"]], False)
            ans = {"contract": None, "layers": layouts[key]} if key in layouts else {"contract": None}
        elif op == "accumulate":
            g, t = accs.get(line(req, False), (None, None))
            ans = passing_answer("AccumulatedHashTest", g, t) if t else \
                {"error": "porting_doc.py: this accumulate request is not one the reference documents: " + raw[:200]}
        elif op == "test":
            g, t = tests[(req["suite"], req["tcId"])]
            want = request(req["suite"], req["type"], g, t)
            if line(req, False) != line(want, False):
                print("porting_doc.py --replay: %s tcId %d: the runner sent\n%s\nbut the reference documents\n%s" % (
                    req["suite"], req["tcId"], line(req), line(want)), file=sys.stderr)
                # a wrong answer on purpose, so the runner reports the test as failed
                ans = {"outputs": {}} if t["result"] != "valid" else {"refused": "request differs from docs/porting.md"}
            else:
                ans = passing_answer(req["type"], g, t)
        elif op == "bye":
            return 0
        else:
            ans = {"error": "unknown op"}
        out.write(json.dumps(ans, ensure_ascii=False, separators=(",", ":")) + "\n")
        out.flush()
    return 0
