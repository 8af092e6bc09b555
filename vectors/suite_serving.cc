// spec/hash.md §HASH.10-§HASH.12, spec/contract.md §CON.7 — suite `serving_v41`:
// packed calls and speculative drafts, each logical case written in every
// engine-native encoding that carries it (generator and verifier, §VEC.14).
#include <algorithm>
#include <functional>

#include "base/error.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/mutants.h"
#include "vectors/serving.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

using Ids = std::vector<int64_t>;

// One request of a case as the generator writes it: the state it continues, the ids beneath its DEAD
// history entries, its slots and the ids beneath its DEAD slots (drafts: with their parents).
struct Request {
  int64_t position = 0;
  Ids history, history_under;
  Ids slots, slots_under;
  Ids parents;   // drafts only
  Ids accepted;  // drafts only
};

// A case's requests laid into one call: slots in request order, then the padding.
ServingCase Lay(const Layout& layout, const std::string& type, const std::vector<Request>& requests, const Ids& padding,
                const Ids& padding_under) {
  ServingCase c;
  c.type = type;
  PackedCall& call = c.call;
  call.cu_seqlens = {0};
  for (const Request& q : requests) {
    call.histories.push_back(HashHistory{q.position, q.history, LayoutFingerprint(layout)});
    c.history_under.push_back(q.history_under);
    std::vector<int64_t> depth;
    for (size_t j = 0; j < q.slots.size(); ++j) {
      call.ids.push_back(q.slots[j]);
      c.under.push_back(q.slots_under[j]);
      if (type == "DraftTreeTest") {
        call.parents.push_back(q.parents[j]);
        depth.push_back(q.parents[j] < 0 ? 0 : depth[static_cast<size_t>(q.parents[j])] + 1);
        call.positions.push_back(q.position + depth.back());
      } else {
        call.positions.push_back(q.position + static_cast<int64_t>(j));
      }
    }
    call.cu_seqlens.push_back(static_cast<int64_t>(call.ids.size()));
    if (type == "DraftTreeTest") call.accepted.push_back(q.accepted);
  }
  for (size_t i = 0; i < padding.size(); ++i) {
    call.ids.push_back(padding[i]);
    c.under.push_back(padding_under[i]);
    call.positions.push_back(0);  // as vLLM pads them; never read
    if (type == "DraftTreeTest") call.parents.push_back(-1);
  }
  return c;
}

// Ids of a group: drawn below V, a DEAD slot at the indices `dead` (the id beneath it drawn too).
struct Draw {
  InputRng rng;
  int64_t v;
  int64_t Id() { return rng.Below(v); }
  void Fill(Ids& ids, Ids& under, size_t n, const std::vector<size_t>& dead) {
    ids.clear();
    under.clear();
    for (size_t i = 0; i < n; ++i) {
      const int64_t id = Id();
      const bool masked = std::find(dead.begin(), dead.end(), i) != dead.end();
      ids.push_back(masked ? kDead : id);
      under.push_back(id);
    }
  }
  // A request at `position` with its history (DEAD at `dead_history`) and n slots (DEAD at `dead_slots`).
  Request At(int64_t position, int max_ngram, size_t n, const std::vector<size_t>& dead_history = {},
             const std::vector<size_t>& dead_slots = {}) {
    Request q;
    q.position = position;
    Fill(q.history, q.history_under, static_cast<size_t>(std::min<int64_t>(position, max_ngram - 1)), dead_history);
    Fill(q.slots, q.slots_under, n, dead_slots);
    return q;
  }
};

void AddServingNotes(SuiteBuilder& b) {
  b.Header("Serving call shapes (§HASH.10-§HASH.12): many requests packed into one flat buffer, each continuing its");
  b.Header("own state; speculative drafts (linear and tree) verified and committed. Each logical case is written in");
  b.Header("every engine-native encoding of §CON.7 that carries it: the test's `encoding` says which.");
  b.Note("PackedCall", "BASIC",
         "Several requests in one flat buffer with boundaries cuSeqlens: each request's rows and state are those of "
         "continuing its own history over its own slots (§HASH.10).",
         "§HASH.10");
  b.Note("EmptyRequest", "EDGE_CASE",
         "Equal boundaries: a request with no slot in this call (a CUDA-graph padded request, or one with nothing "
         "scheduled); its state passes through unchanged.",
         "§HASH.10");
  b.Note("Padding", "EDGE_CASE",
         "Slots after the last boundary: never consumed, never read, no row compared; every state stays as the "
         "requests' own slots leave it.",
         "§HASH.10");
  b.Note("MidSequence", "BASIC",
         "A request continues a sequence that began in an earlier call (or on another instance): its windows read "
         "its history, at positions P, P + 1, ... (here up to beyond 2^32 where the encoding carries it).",
         "§HASH.10");
  b.Note("ShortHistory", "EDGE_CASE",
         "A request less than max - 1 ids into its sequence: its history is short and its first windows reach the "
         "sequence's start.",
         "§HASH.10");
  b.Note("DeadInHistory", "EDGE_CASE",
         "A DEAD id in a request's history or in its slots: it blocks the older slots of the later windows; in the "
         "encodings with a separate mask (vllm, slotCache) the id beneath it is given.",
         "§HASH.10");
  b.Note("LinearDraft", "BASIC",
         "Drafts in a chain, verified in one call: every draft's rows; the state after committing the accepted "
         "prefix (the rejected drafts never enter it).",
         "§HASH.11");
  b.Note("TreeDraft", "BASIC",
         "Drafts in a tree: each draft's window follows its own path to the committed state (siblings share a "
         "position and never see each other); the committed path is one branch.",
         "§HASH.11");
  b.Note("BadBoundary", "INVALID_INPUT",
         "cuSeqlens that start above 0, decrease, or pass the buffer's end: a kernel that trusted them would read "
         "or write outside a request. Must be refused.",
         "§HASH.10");
  b.Note("BadId", "INVALID_INPUT", "A request slot or a history id outside §HASH.1's domain (here V). Must be refused.",
         "§HASH.10");
  b.Note("BadDraft", "INVALID_INPUT",
         "A draft whose parent is not an earlier draft of its request, or an accepted list that is not a path from "
         "the committed state. Must be refused.",
         "§HASH.11");
  b.Divergence("CrossRequestLeak",
               "Changes under the known bug of bounding a window by the buffer instead of its request: a slot's "
               "look-back reads the buffer's earlier slots across its request's first boundary (another request's "
               "ids), and its own history only before the buffer's start; a position below 0 still blocks, and the "
               "states after the call are the reference's. onnxruntime's packed-op test guards this clamp "
               "(spec/sources.md [SRC-SERVE-ONNXRUNTIME]). The naive flatten, which also ignores the positions, fails "
               "every valid test of this suite instead (the no-leak control of §HASH.10, the adapter's planted "
               "naive-flatten): a flag for it would mark every valid test.",
               "§HASH.10", ServingMutantBug(ServingMutant::kCrossRequestLeak));
  b.Divergence("RestartEachCall",
               "Changes under the known bug of a hash call that takes no position and no history, so that every call "
               "(every micro-batch or decode step of a request) hashes its ids as a sequence start and hands on the "
               "state of that fresh sequence (llama.cpp PR #19654, src/llama-engram.cpp:56 compute_hash, "
               "spec/sources.md [SRC-SERVE-LLAMACPP]).",
               "§HASH.10", ServingMutantBug(ServingMutant::kRestartEachCall));
  b.Divergence("PaddingWritesState",
               "Changes under the known bug of consuming the padding slots as slots of the last request after its own "
               "(vLLM's kernel counts them as the last request's, spec/sources.md [SRC-SERVE-VLLM]; a port that also "
               "writes their state): the last request's state after the call, or the slot cache, holds them. Rows "
               "are unchanged (padding rows are not compared).",
               "§HASH.10", ServingMutantBug(ServingMutant::kPaddingWritesState));
  b.Divergence("RejectedDraftsKept",
               "Changes under the known bug of keeping every verified draft in the state, rejected or not (in slot "
               "order), instead of the accepted path only.",
               "§HASH.11", ServingMutantBug(ServingMutant::kRejectedDraftsKept));
  b.Divergence("MaskNotAppliedToHistory",
               "Changes under the known bug of applying the DEAD mask to a slot's own window only: the later windows, "
               "the state handed on and the slot cache read the id beneath a masked slot (ROCm/ATOM, "
               "atom/models/deepseek_v41_engram.py:228 build_history takes no mask and compresses the ids without "
               "it at line 240, spec/sources.md [SRC-SERVE-ATOM]); the mask of the history handed in is dropped "
               "the same way. Only the encodings that carry the id beneath a mask (vllm, slotCache) can show it.",
               "§HASH.10", ServingMutantBug(ServingMutant::kMaskNotAppliedToHistory));
  AddMutantNotes(b, {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kInt32Multipliers});
}

struct ServingGroupSpec {
  ojson config;
  int64_t v, pad;
  std::string comment;
};

// The flags of the catalogue a valid test carries: each bug's outputs, in the test's encoding and from what that
// encoding carries, compared with the expected ones.
std::vector<std::string> BugFlags(const Layout& layout, int64_t seed, const ServingCase& c, const ojson& expected) {
  std::vector<std::string> flags;
  const ServingCase seen = AsSeen(layout, c);
  for (ServingMutant m : kServingMutants) {
    if (ServingOutputs(layout, seen, ServingMutantOutcome(layout, seen, m)) != expected) flags.push_back(ServingMutantFlag(m));
  }
  for (Mutant m : MutantsFor(Profile::kV41)) {
    if (MutantRowsEqualReference(m, layout)) continue;
    const Layout ml = MutantLayout(m, layout, seed);
    if (ServingOutputs(layout, seen, HashMutantOutcome(layout, ml, seen, m)) == expected) continue;
    // §VEC.12 the row-id bugs cannot reach this suite's layouts (checked, not assumed).
    if (m == Mutant::kRowIdUint32 || m == Mutant::kRowIdInt32) {
      throw Error("generator bug: serving_v41 changes under " + MutantFlag(m) + " but carries no note of it");
    }
    flags.push_back(MutantFlag(m));
  }
  return flags;
}

// Writes `logical` in every encoding of `encodings` that carries it, one test each.
void AddCase(SuiteBuilder& b, size_t g, const Layout& layout, int64_t seed, ServingCase logical,
             const std::string& comment, const std::vector<std::string>& flags, const std::vector<std::string>& refs,
             const std::vector<std::string>& encodings, uint64_t cache_seed) {
  for (const std::string& encoding : encodings) {
    if (!EncodingCarries(encoding, logical)) continue;
    ServingCase c = logical;
    c.encoding = encoding;
    if (encoding == "slotCache") LaySlotCache(layout, c, cache_seed);
    const ojson inputs = ServingInputs(layout, c);
    ojson fields = inputs;
    fields["result"] = "valid";
    const ojson outputs = ServingOutputs(layout, c, ServingReference(layout, c));
    for (const auto& [k, v] : outputs.items()) fields[k] = v;
    std::vector<std::string> all = flags;
    for (const std::string& f : BugFlags(layout, seed, c, outputs)) all.push_back(f);
    // §HASH.10 the no-leak control: a valid case the naive flatten passes proves nothing.
    if (ServingOutputs(layout, c, ServingMutantOutcome(layout, c, ServingMutant::kNaiveFlatten)) == outputs) {
      throw Error("generator bug: serving_v41 case \"" + comment + "\" (" + encoding +
                  ") gives the naive flatten's outputs (§HASH.10 no-leak control)");
    }
    b.Test(g, comment + " (" + encoding + ")", all, refs, fields);
  }
}

// An input the call's rules refuse, written in `encoding`.
void AddInvalid(SuiteBuilder& b, size_t g, const Layout& layout, ServingCase c, const std::string& encoding,
                const std::string& comment, const std::string& flag, const std::string& ref, uint64_t cache_seed) {
  c.encoding = encoding;
  if (encoding == "slotCache") LaySlotCache(layout, c, cache_seed);
  ojson fields = ServingInputs(layout, c);
  fields["result"] = "invalid";
  std::string error;
  try {
    ServingReference(layout, ReadServingCase(layout, c.type, nlohmann::json::parse(fields.dump())));
  } catch (const Error& e) {
    error = e.what();
  }
  if (error.empty()) throw Error("generator bug: serving_v41 invalid case \"" + comment + "\" is accepted");
  fields["error"] = error;
  b.Test(g, comment + " (" + encoding + ")", {flag}, {ref}, fields);
}

// The DraftTreeTest group (§HASH.11): its cases continue the packed group's draws, so the vectors keep their bytes.
void AddDraftGroup(SuiteBuilder& b, const ServingGroupSpec& gs, const EngramConfig& cfg, const Layout& layout, Draw& d,
                   uint64_t cache_seed) {
  const int m = layout.max_ngram;
  const std::vector<std::string> draft_encodings = {"engram", "vllm", "onnxruntime"};
  const size_t dg = b.Group({{"type", "DraftTreeTest"},
                             {"comment", gs.comment},
                             {"profile", "v4.1"},
                             {"config", gs.config},
                             {"compressedVocabSize", gs.v},
                             {"compressedPad", gs.pad},
                             {"layers", LayersJson(layout)},
                             {"layoutFingerprint", LayoutFingerprint(layout)}});
  {
    Request a = d.At(14, m, 4, {0}, {});
    a.parents = {-1, 0, 1, 2};
    a.accepted = {0, 1};
    Request c = d.At(3, m, 3, {}, {1});
    c.parents = {-1, 0, 1};
    c.accepted = {};
    Request e = d.At(8, m, 2);
    e.parents = {-1, 0};
    e.accepted = {0, 1};
    AddCase(b, dg, layout, cfg.seed, Lay(layout, "DraftTreeTest", {a, c, e}, {}, {}),
            "linear drafts of 4, 3 and 2 tokens: 2, none and all accepted",
            {"LinearDraft", "MidSequence", "DeadInHistory"}, {"§HASH.11"}, draft_encodings, cache_seed + 5);
  }
  {
    // A tree: root 0 with children 1 and 2, 3 under 2, 4 under 1, 5 a second root; the accepted branch 0, 2, 3.
    Request a = d.At(25, m, 6, {}, {4});
    a.parents = {-1, 0, 0, 2, 1, -1};
    a.accepted = {0, 2, 3};
    Request c = d.At(2, m, 3);
    c.parents = {-1, -1, 1};
    c.accepted = {1};
    AddCase(b, dg, layout, cfg.seed, Lay(layout, "DraftTreeTest", {a, c}, {}, {}),
            "tree drafts (two roots, siblings at one position): the accepted branch is one path",
            {"TreeDraft", "MidSequence", "ShortHistory", "DeadInHistory"}, {"§HASH.11"}, draft_encodings,
            cache_seed + 6);
  }
  {
    Request a = d.At(6, m, 3);
    a.parents = {-1, 0, 0};
    a.accepted = {0, 1};
    ServingCase c = Lay(layout, "DraftTreeTest", {a}, {}, {});
    c.call.parents[1] = 2;
    AddInvalid(b, dg, layout, c, "engram", "a draft whose parent comes after it", "BadDraft", "§HASH.11", cache_seed);
    c.call.parents[1] = 0;
    c.call.accepted = {{1, 2}};
    for (const char* e : {"engram", "vllm"}) {
      AddInvalid(b, dg, layout, c, e, "an accepted list of two siblings, not a path", "BadDraft", "§HASH.11", cache_seed);
    }
  }
}

void AddGroup(SuiteBuilder& b, const ServingGroupSpec& gs, size_t index) {
  const EngramConfig cfg = ParseConfig(nlohmann::json::parse(gs.config.dump()), "config", Profile::kV41);
  const Layout layout = BuildLayout(cfg, gs.v, gs.pad);
  const int m = layout.max_ngram;
  const size_t g = b.Group({{"type", "PackedBatchTest"},
                            {"comment", gs.comment},
                            {"profile", "v4.1"},
                            {"config", gs.config},
                            {"compressedVocabSize", gs.v},
                            {"compressedPad", gs.pad},
                            {"layers", LayersJson(layout)},
                            {"layoutFingerprint", LayoutFingerprint(layout)}});
  Draw d{InputRng(0x5345525600 + index), gs.v};
  const std::vector<std::string> all(std::begin(kServingEncodings), std::end(kServingEncodings));
  const uint64_t cache_seed = 0x534C4F54 + index;
  auto pad = [&](size_t n, const std::vector<size_t>& dead) {
    Ids ids, under;
    d.Fill(ids, under, n, dead);
    return std::make_pair(ids, under);
  };
  {
    // A prefill from the start, an empty request, a chunk continuing a history with a DEAD id, a decode step.
    std::vector<Request> q = {d.At(0, m, 6), d.At(20, m, 0), d.At(40, m, 5, {1}, {3}), d.At(9, m, 1)};
    const auto [p, pu] = pad(2, {});
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, p, pu),
            "a prefill from the start, an empty request, a chunk continuing a history that holds DEAD, a decode step; "
            "two padding slots",
            {"PackedCall", "EmptyRequest", "Padding", "MidSequence", "DeadInHistory"}, {"§HASH.10"}, all, cache_seed);
  }
  {
    // Prompts from their start: nothing to restart, but every window after the first boundary would leak.
    std::vector<Request> q = {d.At(0, m, 3), d.At(0, m, 4), d.At(0, m, 2, {}, {0})};
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, {}, {}),
            "three prompts, each from its sequence's start", {"PackedCall", "DeadInHistory"}, {"§HASH.10"}, all,
            cache_seed + 7);
  }
  {
    // A decode batch: one slot per request, mid-sequence; repeated boundaries at the end (padded requests).
    std::vector<Request> q = {d.At(5, m, 1), d.At(17, m, 1), d.At(2, m, 1), d.At(30, m, 1, {0}), d.At(11, m, 0),
                              d.At(11, m, 0)};
    const auto [p, pu] = pad(3, {1});
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, p, pu),
            "a decode batch: one slot per request, each mid-sequence, then two empty requests (repeated boundaries) "
            "and three padding slots",
            {"PackedCall", "EmptyRequest", "Padding", "MidSequence", "DeadInHistory"}, {"§HASH.10"}, all,
            cache_seed + 1);
  }
  {
    // Short histories, and (where the encoding carries it) a request beyond 2^32.
    std::vector<Request> q = {d.At(1, m, 3), d.At(2, m, 2), d.At((int64_t{1} << 32) + 7, m, 4, {}, {0})};
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, {}, {}),
            "histories of one and two ids (shorter than max - 1), and a request at position 2^32 + 7",
            {"PackedCall", "ShortHistory", "MidSequence", "DeadInHistory"}, {"§HASH.10"}, all, cache_seed + 2);
    std::vector<Request> near = {d.At(1, m, 3), d.At(2, m, 2), d.At(7, m, 4, {}, {0})};
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", near, {}, {}),
            "histories of one and two ids (shorter than max - 1), and a request at position 7",
            {"PackedCall", "ShortHistory", "MidSequence", "DeadInHistory"}, {"§HASH.10"}, {"sglang", "slotCache"},
            cache_seed + 3);
  }
  {
    // DEAD at the boundaries: the last slot of a request, a history ending in DEAD, a masked padding slot.
    std::vector<Request> q = {d.At(3, m, 4, {}, {3}), d.At(12, m, 3, {static_cast<size_t>(m - 2)}, {1}), d.At(6, m, 2)};
    const auto [p, pu] = pad(2, {0});
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, p, pu),
            "DEAD ids next to the boundaries: a request ending in one, a history ending in one, a masked padding slot",
            {"PackedCall", "Padding", "MidSequence", "DeadInHistory"}, {"§HASH.10"}, all, cache_seed + 4);
  }
  {
    // Cases that tell the two boundary bugs apart (their own draws, so the cases above keep theirs). A request
    // continuing its history at the buffer's start, then a prompt: a call that restarts every request loses the
    // history, while a window bounded by the buffer reads nothing across a boundary (the prompt's windows stop at
    // its start, where its positions block them).
    Draw e{InputRng(0x5345525680 + index), gs.v};
    std::vector<Request> q = {e.At(40, m, 3), e.At(0, m, 3)};
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", q, {}, {}),
            "a request continuing its history at the buffer's start, then a prompt from its start",
            {"PackedCall", "MidSequence"}, {"§HASH.10"}, all, cache_seed + 8);
    // A prompt, then a request whose whole history is DEAD: a fresh sequence hashes that request's rows as the
    // reference does (positions below 0 and DEAD block alike), but a window bounded by the buffer reads the
    // prompt's ids. Where the state is compared, the restarted state's position still differs.
    std::vector<size_t> all_dead;
    for (int i = 0; i + 1 < m; ++i) all_dead.push_back(static_cast<size_t>(i));
    std::vector<Request> r = {e.At(0, m, 3), e.At(10, m, 2, all_dead)};
    AddCase(b, g, layout, cfg.seed, Lay(layout, "PackedBatchTest", r, {}, {}),
            "a prompt from its start, then a request whose history is all DEAD", {"PackedCall", "MidSequence",
            "DeadInHistory"}, {"§HASH.10"}, all, cache_seed + 9);
  }
  // Inputs that must be refused, in each encoding where the break can be written.
  std::vector<Request> q = {d.At(4, m, 3), d.At(9, m, 2)};
  // One padding slot and the id beneath it, drawn in that order as statements: two draws in one call's
  // arguments would be drawn in an order each compiler picks.
  const int64_t pad_under = d.Id();
  const int64_t pad_id = d.Id();
  const ServingCase base = Lay(layout, "PackedBatchTest", q, {pad_id}, {pad_under});
  {
    ServingCase c = base;
    c.call.cu_seqlens = {0, 3, 2};
    c.call.histories[1] = HashHistory{9, c.call.histories[1].ids, LayoutFingerprint(layout)};
    for (const char* e : {"engram", "vllm", "onnxruntime"}) {
      AddInvalid(b, g, layout, c, e, "a boundary below the one before it", "BadBoundary", "§HASH.10", cache_seed);
    }
    c.call.cu_seqlens = {0, 3, 7};
    AddInvalid(b, g, layout, c, "engram", "the last boundary beyond the buffer's end", "BadBoundary", "§HASH.10",
               cache_seed);
    c.call.cu_seqlens = {1, 3, 5};
    AddInvalid(b, g, layout, c, "engram", "a first boundary above 0", "BadBoundary", "§HASH.10", cache_seed);
  }
  for (const char* e : {"engram", "vllm", "slotCache"}) {
    ServingCase c = base;
    c.call.ids[4] = gs.v;
    c.under[4] = gs.v;
    AddInvalid(b, g, layout, c, e, "a slot of request 1 holding V", "BadId", "§HASH.10", cache_seed);
  }
  for (const char* e : {"engram", "onnxruntime", "sglang"}) {
    ServingCase c = base;
    c.call.histories[1].ids.back() = gs.v;
    c.history_under[1].back() = gs.v;
    AddInvalid(b, g, layout, c, e, "request 1's history holding V", "BadId", "§HASH.10", cache_seed);
  }
  AddDraftGroup(b, gs, cfg, layout, d, cache_seed);
}

ojson GenerateServing() {
  SuiteBuilder b("serving_v41", "serving.schema.json", "ENGRAM-SERVING");
  AddServingNotes(b);
  const std::vector<ServingGroupSpec> groups = {
      {V41ConfigJson(), 99092, 2, "DeepSeek-V4.1-Flash layout, V = 99092"},
      {SmallV41Config({0, 3}, 5, 4, 2, 12), 12, 1, "tiny v4.1 layout (V = 12, pad 1): DEAD and the pad often meet"},
  };
  for (size_t i = 0; i < groups.size(); ++i) AddGroup(b, groups[i], i);
  return b.Finish();
}

void CheckServingTest(Checker& c, const json& group, const json& t) {
  const Layout layout = GroupLayout(group);
  c.Same(t, "group layoutFingerprint", group.at("layoutFingerprint"), LayoutFingerprint(layout));
  const std::string type = group.at("type").get<std::string>();
  if (!IsValid(t)) {
    try {
      ServingReference(layout, ReadServingCase(layout, type, t));
    } catch (const Error&) {
      return;
    }
    c.Problem(t, "the reference accepts an input the vector marks invalid");
    return;
  }
  const ServingCase sc = ReadServingCase(layout, type, t);
  const ojson expected = ServingOutputs(layout, sc, ServingReference(layout, sc));
  for (const auto& [key, value] : expected.items()) c.Expect(t, key, json::parse(value.dump()));
  // §HASH.10 the no-leak control, on every valid test.
  if (ServingOutputs(layout, sc, ServingMutantOutcome(layout, sc, ServingMutant::kNaiveFlatten)) == expected) {
    c.Problem(t, "the naive flatten (the request slots hashed as one sequence) gives the expected outputs: the "
                 "case proves nothing about boundaries (§HASH.10 no-leak control)");
  }
}

}  // namespace

SuiteDef ServingSuite() {
  return {"serving_v41",
          "serving.schema.json",
          GenerateServing,
          {{"PackedBatchTest", CheckServingTest}, {"DraftTreeTest", CheckServingTest}}};
}

}  // namespace engram::vectors
