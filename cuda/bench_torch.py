#!/usr/bin/env python3
"""The engram_cuda_bench work done by PyTorch eager, for the >= 5x goal.

Same shapes as engram_cuda_bench (read from its JSON with --cuda-json): the
V4.1-Flash hash (2 layers x 24 columns, raw ids through a 129280-entry map,
DEAD blocking, int64 `%` per prime) and the 256-wide FP8 lookup + decode
(index_select of packed 264-byte rows, float8_e4m3fn * 2^(scale-127) -> bf16).
Prints JSON: seconds, tokens/s, and the CUDA/torch speed ratio per item.
Timing: CUDA events, best of several runs after a warm-up. Exits 0 with
{"skipped": ...} when torch or a GPU is missing.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda-json", help="engram_cuda_bench output, for sizes and ratios")
    args = ap.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
        print(json.dumps({"skipped": f"import torch failed: {e}"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch.cuda.is_available() is False"}))
        return 0
    cuda = json.load(open(args.cuda_json)) if args.cuda_json else {}
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0)

    def best_time(fn, reps=5):
        fn()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            best = min(best, a.elapsed_time(b) / 1000.0)
        return best

    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "hash": [], "lookup": []}

    # V4.1-Flash layout: multipliers and primes of spec/random.md §RNG.4 and spec/layout.md §LAY.4;
    # the primes are the 24 consecutive primes of each layer, found here by trial division.
    def primes_after(start, count, seen):
        ps, c = [], start
        while len(ps) < count:
            c += 1
            if c in seen:
                continue
            if all(c % d for d in range(2, int(c ** 0.5) + 1)):
                ps.append(c)
                seen.add(c)
        return ps

    seen = set()
    layers = []
    for mult in ([76632096046245, 4839876093313, 35959672319349, 73987337458391],
                 [67716810739261, 51510806800915, 30921347202721, 82619226485591]):
        primes = []
        for _order in range(3):  # each order restarts at base - 1; `seen` skips used primes
            primes.append(primes_after(16000000 - 1, 8, seen))
        flat = [p for ps in primes for p in ps]
        offsets = [0]
        for p in flat[:-1]:
            offsets.append(offsets[-1] + p)
        layers.append((torch.tensor(mult, device=dev), [torch.tensor(ps, device=dev) for ps in primes],
                       torch.tensor(offsets, device=dev).view(3, 8)))
    token_map = torch.randint(0, 99092, (129280,), generator=g).to(dev)
    pad = 2

    def torch_hash(raw):  # raw [B, T] int64, -1 = DEAD
        comp = token_map[raw.clamp(min=0)]
        comp = torch.where(raw == -1, torch.full_like(comp, -1), comp)
        B, T = comp.shape
        toks, blocked = [], torch.zeros_like(comp, dtype=torch.bool)
        for s in range(4):
            x = torch.nn.functional.pad(comp, (s, 0), value=pad)[:, :T]
            before = torch.arange(T, device=dev).view(1, T) < s
            blocked = blocked | before | (x == -1)
            toks.append(torch.where(blocked, torch.full_like(x, pad), x))
        outs = []
        for mult, primes, offsets in layers:
            rolling = toks[0] * mult[0]
            cols = []
            for k in range(1, 4):
                rolling = rolling ^ (toks[k] * mult[k])
                cols.append(rolling.unsqueeze(-1) % primes[k - 1] + offsets[k - 1])
            outs.append(torch.cat(cols, dim=-1))
        return torch.stack(outs, dim=2)  # [B, T, layers, 24]

    for h in cuda.get("hash", [{"batch": "prefill", "sequences": 256, "tokensPerSequence": 16384}]):
        B, T = h["sequences"], h["tokensPerSequence"]
        raw = torch.randint(0, 129280, (B, T), generator=g)
        raw[torch.rand((B, T), generator=g) < 0.02] = -1
        raw = raw.to(dev)
        t = best_time(lambda: torch_hash(raw))
        r = {"batch": h.get("batch"), "tokens": B * T, "seconds": t, "tokensPerSecond": B * T / t}
        if "tokensPerSecond" in h:
            r["cudaSpeedup"] = h["tokensPerSecond"] / r["tokensPerSecond"]
            r["goal"] = ">= 5x torch eager"
        out["hash"].append(r)

    has_e8m0 = hasattr(torch, "float8_e8m0fnu")
    torch_seconds = {}  # (rows, items) -> seconds: torch's gather and decode do not depend on the codes
    for lk in cuda.get("lookup", [{"table": "device memory", "rows": 1 << 22, "items": 1 << 22}]):
        if lk.get("table") != "device memory":
            continue  # torch eager has no mapped-host-memory gather; device table only
        rows, items = lk["rows"], lk["items"]
        if (rows, items) not in torch_seconds:
            table = torch.randint(0, 0x78, (rows, 264), dtype=torch.uint8, device=dev)
            idx = torch.randint(0, rows, (items,), generator=g).to(dev)

            def torch_lookup():
                r = table.index_select(0, idx)
                codes = r[:, :256].contiguous().view(torch.float8_e4m3fn).float().view(items, 8, 32)
                s = r[:, 256:].contiguous()
                scales = s.view(torch.float8_e8m0fnu).float() if has_e8m0 else torch.exp2(s.float() - 127)
                return (codes * scales.unsqueeze(-1)).to(torch.bfloat16).view(items, 256)

            torch_seconds[(rows, items)] = best_time(torch_lookup)
            del table
        t = torch_seconds[(rows, items)]
        r = {"table": "device memory", "codes": lk.get("codes"), "items": items, "seconds": t, "rowsPerSecond": items / t}
        if "rowsPerSecond" in lk:
            r["cudaSpeedup"] = lk["rowsPerSecond"] / r["rowsPerSecond"]
            r["goal"] = ">= 5x torch eager" if str(lk.get("codes", "")).startswith("normal") else "report only"
        out["lookup"].append(r)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
