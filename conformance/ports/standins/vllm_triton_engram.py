"""Stand-in of the vLLM common/engram.py definitions conformance/ports/vllm-triton/adapter.py drives
(NgramHashState.forward as the V2 runner calls it and, with its slot cache, as the V1 runner does;
ParallelEngramEmbedding.lookup, dequantize_packed_engram_rows), with none of their code: no kernel, the row ids and decoded rows come from the in-tree numpy port (_ref.py). CI runs
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


_write_hash_cache_kernel = _hash_ids_kernel = _engram_lookup_kernel = _engram_dequant_packed_kernel = None


def _engram_head_shard_weight_loader(param, loaded_weight):
    raise NotImplementedError


class NgramHashState(nn.Module):
    def forward(self, input_ids, positions, query_start_loc, dead_mask, lookback_token_ids, lookback_dead_mask,
                slot_mapping, block_table):
        """A packed call: each request (query_start_loc) continues from its look-back window, and on the V1 path
        (use_slot_cache) from the slot cache the call first writes its slots into (slot_mapping)."""
        ref = __import__("_ref").ref
        m = self.multipliers.shape[1]
        layout = {"profile": "v4.1", "max_ngram": m, "pad": int(self.pad_id), "v": int(self.token_map.numel()),
                  "heads": int(self.primes.shape[-1]),
                  "layers": [{"multipliers": self.multipliers[i].tolist(), "primes": self.primes[i].tolist(),
                              "offsets": self.offsets[i].tolist()} for i in range(self.multipliers.shape[0])]}
        ids = [DEAD_ID if bool(d) else int(self.token_map[int(t)]) for t, d in zip(input_ids, dead_mask)]
        if self.use_slot_cache:
            for t, s in enumerate(slot_mapping.tolist()):
                if s >= 0:
                    self._cache[s] = ids[t]
        cu = query_start_loc.tolist()
        out = np.zeros((len(ids), len(layout["layers"]), (m - 1) * layout["heads"]), dtype=np.int64)
        for r in range(len(cu) - 1):
            if cu[r] >= cu[r + 1]:
                continue
            start = int(positions[cu[r]])
            back = []
            for q in range(max(start - (m - 1), 0), start):  # oldest first
                c = start - 1 - q
                t = int(lookback_token_ids[r, c]) if c < lookback_token_ids.shape[1] else -1
                if t >= 0:
                    back.append(DEAD_ID if bool(lookback_dead_mask[r, c]) else int(self.token_map[t]))
                elif self.use_slot_cache:
                    bs = self.block_size
                    back.append(int(self._cache[int(block_table[r, q // bs]) * bs + q % bs]))
                else:
                    back.append(int(self.pad_id))
            rows, _ = ref.hash_rows(layout, back, start, ids[cu[r]:cu[r + 1]])
            out[cu[r]:cu[r + 1]] = np.asarray(rows, dtype=np.int64)
        return torch.tensor(out.astype(np.int32))


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
