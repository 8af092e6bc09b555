"""Stand-in of the vLLM common/engram.py definitions conformance/ports/vllm-triton/adapter.py drives
(NgramHashState.forward as the V2 runner calls it, ParallelEngramEmbedding.lookup, dequantize_packed_engram_rows),
with none of their code: no kernel, the row ids and decoded rows come from the in-tree numpy port (_ref.py). CI runs
the adapter on it where torch >= 2 and triton are installed; the real measurement needs the port's checkout."""
import numpy as np

DEAD_ID = -1


def _is_prime(n):
    return __import__("_ref").ref.is_prime(n)


def find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def compute_hash_multipliers(layer_ids, max_ngram_size, compressed_vocab_size):
    return torch.tensor(__import__("_ref").multipliers_of(layer_ids, max_ngram_size, compressed_vocab_size))


class EngramLayout:
    pass


_hash_ids_kernel = _engram_lookup_kernel = _engram_dequant_packed_kernel = None


def _engram_head_shard_weight_loader(param, loaded_weight):
    raise NotImplementedError


class NgramHashState(nn.Module):
    def forward(self, input_ids, positions, query_start_loc, dead_mask, lookback_token_ids, lookback_dead_mask,
                slot_mapping, block_table):
        ref = __import__("_ref").ref
        m = self.multipliers.shape[1]
        layout = {"profile": "v4.1", "max_ngram": m, "pad": int(self.pad_id), "v": int(self.token_map.numel()),
                  "heads": int(self.primes.shape[-1]),
                  "layers": [{"multipliers": self.multipliers[i].tolist(), "primes": self.primes[i].tolist(),
                              "offsets": self.offsets[i].tolist()} for i in range(self.multipliers.shape[0])]}
        ids = [DEAD_ID if bool(d) else int(self.token_map[int(t)]) for t, d in zip(input_ids, dead_mask)]
        start = int(positions[0]) if len(ids) else 0
        back = []
        for c in range(min(start, lookback_token_ids.shape[1])):
            t = int(lookback_token_ids[0, c])
            back.append(DEAD_ID if bool(lookback_dead_mask[0, c]) else int(self.token_map[t]))
        rows, _ = ref.hash_rows(layout, list(reversed(back)), start, ids)
        return torch.tensor(np.asarray(rows, dtype=np.int64).astype(np.int32))


class ParallelEngramEmbedding(nn.Module):
    def lookup(self, indices, out, background=False, packed=False):
        weight, scales = self._storage()
        codes = weight.view(torch.uint8).numpy()
        sc = scales.numpy()
        for r, i in enumerate(indices[:, 0].tolist()):
            if packed:
                out[r, 0] = torch.tensor(np.concatenate([codes[i], sc[i]]))
            else:
                bits = __import__("_ref").ref.decode_row(codes[i], sc[i]).astype(np.uint16).astype(np.int16)
                out[r, 0] = torch.tensor(bits).view(torch.bfloat16)


def dequantize_packed_engram_rows(packed, out, block_size):
    d = out.shape[2]
    for t in range(packed.shape[0]):
        for h in range(packed.shape[1]):
            raw = packed[t, h].numpy()
            bits = __import__("_ref").ref.decode_row(raw[:d], raw[d:]).astype(np.uint16).astype(np.int16)
            out[t, h] = torch.tensor(bits).view(torch.bfloat16)
