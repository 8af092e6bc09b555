"""§TOK the compressed token map (spec/token_map.md): tokenizer.json read as §TOK.1 says, each token decoded
and normalized, equal keys merged; and the raw-id lookup of §HASH.1 through it."""
import hashlib
import json
import re
import unicodedata

import numpy as np

from .bugs import planted
from .hash import DEAD


def byte_to_unicode():
    """§TOK.2 the GPT-2 byte <-> unicode table."""
    direct = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in direct:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


UNICODE_TO_BYTE = {c: b for b, c in byte_to_unicode().items()}
# Unicode White_Space (Rust char::is_whitespace); str.strip() would also strip U+001C ... U+001F.
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + \
    "\u2028\u2029\u202f\u205f\u3000"


def decode_token(token, added=False):
    """§TOK.2 single-id decode: bytes through the table (or the token's own UTF-8), then lossy UTF-8.

    --bug added-token-content: an added token's text is its content, unchanged.
    """
    if added and planted("added-token-content"):
        return token
    if all(c in UNICODE_TO_BYTE for c in token):
        data = bytes(UNICODE_TO_BYTE[c] for c in token)
    else:
        data = token.encode("utf-8")
    text = data.decode("utf-8", errors="replace")  # one U+FFFD per maximal subpart, like from_utf8_lossy
    if planted("python-wrapper-decode"):
        # transformers' clean_up_tokenization (clean_up_tokenization_spaces=True), in its order.
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                     (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
            text = text.replace(a, b)
    return text


def normalize(text):
    """§TOK.3 NFKC, NFD, strip marks, per-code-point lowercase, whitespace runs, sentinel, strip, sentinel.

    --bug context-lowercase: str.lower() of the whole text (Final_Sigma: a word-final sigma becomes ς).
    --bug sentinel-less: no sentinel steps: whitespace that collapses to " " strips to "".
    """
    t = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    t = "".join(c for c in t if unicodedata.category(c) not in ("Mn", "Mc", "Me"))
    if planted("context-lowercase"):
        t = t.lower()
    else:
        t = "".join(c.lower() for c in t)  # one code point at a time: no final-sigma context
    t = re.sub("[ \t\r\n]+", " ", t)
    if planted("sentinel-less"):
        return t.strip(WHITE_SPACE)
    if t == " ":
        t = "\ue000"
    return t.strip(WHITE_SPACE).replace("\ue000", " ")


def load_tokenizer(text):
    """§TOK.1 tokenizer.json text -> (tokens[id], the set of added token ids); refuses what §TOK.1 refuses."""
    def pairs(items):
        seen = {}
        for k, v in items:
            if k in seen and not planted("hf-loader-unchecked"):  # the loader's map keeps the last
                raise ValueError(f"key {k!r} appears twice")
            seen[k] = v
        return seen

    try:
        doc = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ValueError(f"tokenizer.json is not JSON: {e}")
    if not isinstance(doc, dict):
        raise ValueError("tokenizer.json is not an object")
    model = doc.get("model")
    if planted("hf-loader-unchecked"):
        return hf_loader_tokens(doc)
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"model.type {model.get('type') if isinstance(model, dict) else None!r} is not 'BPE'")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise ValueError("model.vocab is not an object")
    by_id = {}
    for token, i in vocab.items():
        if type(i) is not int or not 0 <= i < (1 << 31):
            raise ValueError(f"model.vocab[{token!r}] = {i!r} is not an id")
        if i in by_id:
            raise ValueError(f"id {i} is given to {by_id[i]!r} and {token!r}")
        by_id[i] = token
    n = len(vocab)
    if set(by_id) != set(range(n)):
        raise ValueError(f"model.vocab ids are not 0 .. {n - 1}: id {min(set(range(n)) - set(by_id))} has no token")
    dec = doc.get("decoder")
    ok = isinstance(dec, dict) and (dec.get("type") == "ByteLevel" or (
        dec.get("type") == "Sequence" and isinstance(dec.get("decoders"), list) and len(dec["decoders"]) == 1
        and isinstance(dec["decoders"][0], dict) and dec["decoders"][0].get("type") == "ByteLevel"))
    if not ok:
        raise ValueError(f"decoder {dec!r} is not ByteLevel")
    tokens = {i: t for i, t in by_id.items()}
    vocab_id = dict(vocab)
    added_ids, highest = {}, None
    for k, a in enumerate(doc.get("added_tokens") or []):
        if not isinstance(a, dict) or not isinstance(a.get("content"), str) or not a["content"] \
                or type(a.get("id")) is not int or not 0 <= a["id"] < (1 << 31) \
                or ("special" in a and not isinstance(a["special"], bool)):
            raise ValueError(f"added_tokens[{k}] is malformed")
        c = a["content"]
        if c in added_ids:
            assigned = added_ids[c]
        elif c in vocab_id:
            assigned = vocab_id[c]
        else:
            assigned = n if highest is None or highest < n else highest + 1
        if a["id"] != assigned:
            raise ValueError(f"added token {c!r} declares id {a['id']}, the loader assigns {assigned}")
        added_ids[c] = assigned
        highest = assigned if highest is None else max(highest, assigned)
        tokens[assigned] = c
    size = max(tokens) + 1 if tokens else 0
    if set(tokens) != set(range(size)):
        raise ValueError("ids are not 0 .. T-1")
    return [tokens[i] for i in range(size)], set(added_ids.values())


def hf_loader_tokens(doc):
    """--bug hf-loader-unchecked: the tokens as a Hugging Face tokenizer loaded from the file lists them (the
    official V4.1 code's build_compressed_token_map: range(len(tokenizer)), backend.decode): the vocab in id
    order, a hole or a duplicate id left as it falls, added tokens after it, their declared ids ignored, the
    decoder not looked at. What that loader cannot read is refused: a model type other than BPE (none is
    read as BPE), a vocab id that is not a u32, a ByteLevel decoder step without add_prefix_space or
    trim_offsets."""
    model = doc.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE" or not isinstance(model.get("vocab"), dict):
        raise ValueError("the loader cannot read the model")
    dec = doc.get("decoder")
    steps = [dec] + (dec.get("decoders") or [] if isinstance(dec, dict) and dec.get("type") == "Sequence" else [])
    for st in steps:
        if isinstance(st, dict) and st.get("type") == "ByteLevel" and not {"add_prefix_space", "trim_offsets"} <= set(st):
            raise ValueError("the loader cannot read a ByteLevel decoder without add_prefix_space / trim_offsets")
    vocab = {}
    for token, i in model["vocab"].items():  # a token given twice: the loader keeps its last id
        if type(i) is not int or not 0 <= i < (1 << 32):
            raise ValueError(f"model.vocab[{token!r}] = {i!r} is not a u32")
        vocab[token] = i
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))]
    added = set()
    for a in doc.get("added_tokens") or []:
        if a["content"] in tokens:
            added.add(tokens.index(a["content"]))
        else:
            added.add(len(tokens))
            tokens.append(a["content"])
    return tokens, added


def token_map_test(group, test):
    tokens, added = load_tokenizer(group["tokenizerJson"])
    keys, cmap = {}, []
    for i, tok in enumerate(tokens):
        text = decode_token(tok, i in added)
        if "\ufffd" in text:
            key = tok  # §TOK.4 the raw token; one dictionary serves all three kinds of key
        else:
            key = normalize(text) or text
        cmap.append(keys.setdefault(key, len(keys)))
    out = {"tokens": len(tokens), "compressedSize": len(keys),
           "sha256": hashlib.sha256(np.asarray(cmap, dtype="<i4").tobytes()).hexdigest(), "map": cmap}
    if "engramCompressedVocabSize" in test and test["engramCompressedVocabSize"] != len(keys):
        raise ValueError(f"engram_compressed_vocab_size {test['engramCompressedVocabSize']} != {len(keys)} ids")
    if "padId" in test or "engramCompressedVocabSize" in test:
        pad = test.get("padId", 0)
        wraps = planted("negative-pad-wraps") and -len(tokens) <= pad < 0  # token_map[pad]: Python/torch/numpy wrap
        if not 0 <= pad < len(tokens) and not wraps:
            raise ValueError(f"pad id {pad} is outside [0, {len(tokens)})")
        if "padId" in test:
            out["compressedPad"] = cmap[pad]
    return out


def token_lookup_test(group, test):
    """§HASH.1 raw ids (and a v4.1 mask) to the compressed ids the hash takes."""
    cmap = token_map_test(group, {})["map"]
    raw, mask, v41 = test["rawIds"], test.get("mask"), group["profile"] == "v4.1"
    if mask is not None and not v41:
        raise ValueError("mask: demo-v1 has no mask")
    if planted("mask-broadcast") and mask is not None and len(mask) == 1:
        mask = mask * len(raw)  # torch.where(token_mask, ...) broadcasts a [1, 1] mask over [1, L]
    if mask is not None and len(mask) != len(raw):
        raise ValueError(f"mask: {len(mask)} entries for {len(raw)} ids")
    out = []
    for i, x in enumerate(raw):
        if planted("raw-clamp") and v41:
            c = cmap[min(max(x, 0), len(cmap) - 1)]  # sglang: tokens.clamp(0, T - 1) before the map
        elif planted("raw-outside-pad") and v41 and not 0 <= x < len(cmap):
            c = cmap[0]  # lucebox's compress: outside the map is the pad (a lookup test has none: any id will do)
        elif planted("official-indexing") and v41 and -len(cmap) <= x < 0:
            c = cmap[x]  # the official V4.1 code: token_map[input_ids], torch indexing wraps (-1 -> T - 1)
        elif v41 and x == DEAD:
            c = DEAD  # raw -1 marks a masked position
        elif not v41 and x < 0:
            c = x  # the demo copies negative ids through
        elif planted("raw-beyond-dead") and v41 and x >= len(cmap):
            c = DEAD  # the fork's policy: beyond the tokenizer is DEAD, not a refusal
        elif 0 <= x < len(cmap):  # never cmap[x] for x < 0: Python indexing would wrap around (-2 -> T - 2)
            c = cmap[x]
        else:
            raise ValueError(f"rawIds[{i}]: {x} is not a raw id in [0, {len(cmap)})" + (" or -1" if v41 else ""))
        if v41 and mask is not None and not mask[i]:
            c = DEAD  # masked after the lookup
        out.append(c)
    return {"ids": out}
