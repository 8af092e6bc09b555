/**
 * \file engram/conformance.h
 * \brief The C ABI through which the conformance runner drives an Engram implementation (spec §CONF.3).
 *
 * An implementation builds a shared library that exports engram_conformance_info() and the entry points
 * of the operations it supports; `engram conform --lib PATH` loads it (through `engram plugin-host`,
 * in a child process, so that a crash is a reported failure) and calls them with the inputs of each test
 * vector. A missing entry point makes the tests that need it `skipped`.
 *
 * Conventions:
 * - Only engram_conformance_info() is required; every other entry point is optional (see
 *   ENGRAM_CONFORMANCE_ABI_MINOR).
 * - Every function that can fail returns 0 on success and a non-zero value when it refuses its input,
 *   writing a NUL-terminated message of at most `err_len` bytes into `err`. Refusing is the correct
 *   answer to vectors marked `invalid` (spec §VEC.3).
 * - Integers are the spec's types: ids, multipliers, primes, offsets and rows are int64_t.
 * - Arrays are caller-allocated unless stated otherwise; sizes are given by the query functions.
 * - Handles are opaque; each `*_create` has a matching `*_destroy`.
 */
#ifndef ENGRAM_CONFORMANCE_H_
#define ENGRAM_CONFORMANCE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; engram_conformance_info() must report it. */
#define ENGRAM_CONFORMANCE_ABI_VERSION 1
/**
 * Feature level within ABI version 1, for `#if` checks in an implementation's sources; never reported at run time.
 * 0: configuration, layout, hashing, element decode, contract. 1 adds the entry points marked "ABI 1.1" (tables,
 * tensor parallelism, token map, gates, wkv, ShortConv, forward); 2 adds "ABI 1.2" (engram_token_map_compress, the
 * raw ids of TokenLookupTest, §HASH.1); 3 adds "ABI 1.3" (engram_conv_state_*: ShortConv carried across calls,
 * §FUS.12); 4 adds "ABI 1.4" (engram_hash_packed: the packed calls and speculative
 * drafts of suite serving_v41, §HASH.10-§HASH.12). Every entry point except
 * engram_conformance_info() is optional: the plug-in host looks each one up by name (`dlsym`), so a library built
 * against level 0 still loads and its suites run; the tests that need an entry point it lacks are `skipped`.
 */
#define ENGRAM_CONFORMANCE_ABI_MINOR 4

/** What an implementation is and what it claims (spec §CONF.2 handshake). */
typedef struct engram_conformance_info_t {
  uint32_t abi_version; /**< ENGRAM_CONFORMANCE_ABI_VERSION */
  const char* name;     /**< implementation name, e.g. "my-port" */
  const char* version;  /**< implementation version */
  const char* suites;   /**< comma-separated vector suites claimed, e.g. "multipliers,layout,hash_v41" */
  const char* profiles; /**< comma-separated profiles claimed: "v4.1", "demo-v1" */
} engram_conformance_info_t;

/** Required. Returns a pointer to static data describing the implementation. */
const engram_conformance_info_t* engram_conformance_info(void);

/**
 * Optional (spec §CON, §CONF.2 `contract`). Writes the hash contract of the model the implementation serves
 * (§CON.1: its layers, token-map digest, ...) as NUL-terminated JSON into `out`. Returns non-zero when the
 * implementation has no such model or `out_len` is too small (the message says which). The runner checks the
 * contract's form and digest, and compares its layers with the vectors' layout for the same configuration
 * before running any test.
 */
int engram_contract_json(char* out, size_t out_len, char* err, size_t err_len);

/* ---------------------------------------------------------------- §RNG numpy-exact random numbers */

/**
 * numpy `default_rng(seed).integers(low, high_minus_one + 1, size=count, dtype=int64)` (spec §RNG.1–§RNG.3).
 * The exclusive bound is passed as high − 1 so that high = 2^63 fits. Refuses low > high_minus_one.
 */
int engram_bounded_integers(uint64_t seed, int64_t low, int64_t high_minus_one, size_t count, int64_t* out,
                            char* err, size_t err_len);

/**
 * The layer's hash multipliers (spec §RNG.4): `max_ngram` values written to `out`.
 * Refuses compressed_vocab_size < 1 and seeds the spec refuses.
 */
int engram_multipliers(int64_t seed, int64_t layer_id, int64_t compressed_vocab_size, int32_t max_ngram, int64_t* out,
                       char* err, size_t err_len);

/* ---------------------------------------------------------------- §CFG §LAY configuration and layout */

/** An Engram layout: configuration + V + compressed pad (spec §LAY.3). */
typedef struct engram_layout engram_layout;

/**
 * Builds the layout of a configuration document (JSON text as spec §CFG reads it; `profile` is "v4.1",
 * "demo-v1" or NULL to detect) for a token map of `compressed_vocab_size` ids whose pad maps to
 * `compressed_pad`. Returns NULL (and a message in `err`) when the spec refuses the configuration,
 * including the §LAY.4 consistency checks.
 */
engram_layout* engram_layout_create(const char* config_json, const char* profile, int64_t compressed_vocab_size,
                                    int64_t compressed_pad, char* err, size_t err_len);
/** Releases a layout. */
void engram_layout_destroy(engram_layout* layout);
/** Number of Engram layers. */
int32_t engram_layout_layer_count(const engram_layout* layout);
/** Max n-gram order (each layer has that many multipliers). */
int32_t engram_layout_max_ngram(const engram_layout* layout);
/** Columns per layer: (max_ngram − 1) · heads. */
int32_t engram_layout_columns(const engram_layout* layout);
/**
 * One layer's parameters: its id, `max_ngram` multipliers, `columns` primes (order-major), `columns`
 * offsets and its table rows (spec §LAY.2–§LAY.3). Returns non-zero for a bad index.
 */
int engram_layout_layer(const engram_layout* layout, int32_t index, int64_t* layer_id, int64_t* multipliers,
                        int64_t* primes, int64_t* offsets, int64_t* num_embeddings);
/** The layout fingerprint (spec §LAY.5) as 64 hex digits plus NUL into `out` (65 bytes). */
void engram_layout_fingerprint(const engram_layout* layout, char* out);

/* ---------------------------------------------------------------- §HASH hashing with per-sequence state */

/** One sequence's hash state (spec §HASH.5). */
typedef struct engram_hasher engram_hasher;

/** A fresh sequence that can roll back up to `rollback_capacity` ids (spec §HASH.6). */
engram_hasher* engram_hasher_create(const engram_layout* layout, size_t rollback_capacity, char* err, size_t err_len);
/** An independent copy (fork, spec §HASH.6). */
engram_hasher* engram_hasher_fork(const engram_hasher* hasher);
/** Releases a hasher. */
void engram_hasher_destroy(engram_hasher* hasher);
/**
 * Consumes `n` compressed ids (v4.1: −1 is DEAD) and writes n · layers · columns row ids to `rows`
 * in the order rows[position][layer][column] (spec §HASH.4). Refuses ids outside the §HASH.1 domain,
 * leaving the state unchanged.
 */
int engram_hasher_append(engram_hasher* hasher, const int64_t* ids, size_t n, int64_t* rows, char* err,
                         size_t err_len);
/** Rollback by k ids (spec §HASH.6); refuses when the retained history is too short. */
int engram_hasher_rollback(engram_hasher* hasher, size_t k, char* err, size_t err_len);
/** Ids consumed so far. */
int64_t engram_hasher_position(const engram_hasher* hasher);
/** Writes the last min(position, max_ngram − 1) ids (oldest first) to `ids` and returns their count. */
size_t engram_hasher_history(const engram_hasher* hasher, int64_t* ids);
/**
 * Replaces the state by an imported history (spec §HASH.9): `count` ids for `position`, exported by the
 * layout with fingerprint `layout_fingerprint` (64 hex digits). Refuses a history that does not fit.
 */
int engram_hasher_import(engram_hasher* hasher, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len);

/**
 * ABI 1.4 (§HASH.10-§HASH.12). One call of a serving engine: `requests` requests packed into a flat buffer of
 * `slots` compressed ids (DEAD = −1), request r owning slots [cu_seqlens[r], cu_seqlens[r + 1]) and the slots from
 * cu_seqlens[requests] on being padding (never consumed, never read). Every request continues its own state, a
 * §HASH.9 history: `history_positions[r]`, `history_counts[r]` = min(position, max_ngram − 1) and its ids, oldest
 * first, in `history_ids[r · (max_ngram − 1) ...]`. `positions` gives each slot's absolute position. With
 * `parents` (§HASH.11) the request slots are drafts: each one's parent is −1 (the committed state) or an earlier
 * draft of its request (its index within the request), and `accepted` gives per request the committed path
 * (indices within the request; request r's are accepted[accepted_offsets[r] ... accepted_offsets[r + 1]]).
 */
typedef struct engram_packed_call_t {
  const int64_t* ids;               /**< `slots` compressed ids, DEAD = −1 */
  size_t slots;                     /**< T */
  const int64_t* cu_seqlens;        /**< `requests` + 1 boundaries */
  size_t requests;                  /**< B */
  const int64_t* positions;         /**< `slots` absolute positions (padding: any) */
  const int64_t* history_positions; /**< B positions before the call */
  const size_t* history_counts;     /**< B counts, each min(position, max_ngram − 1) */
  const int64_t* history_ids;       /**< B · (max_ngram − 1) ids, request r's first history_counts[r] at r · (max_ngram − 1) */
  const int64_t* parents;           /**< NULL, or `slots` parents (drafts, §HASH.11) */
  const int64_t* accepted;          /**< with `parents`: the accepted paths, request after request */
  const size_t* accepted_offsets;   /**< with `parents`: B + 1 offsets into `accepted` */
} engram_packed_call_t;

/** ABI 1.4. What a packed call gives; arrays caller-allocated. */
typedef struct engram_packed_result_t {
  int64_t* rows;               /**< cu_seqlens[B] · layers · columns rows, [slot][layer][column] (§HASH.4) */
  size_t rows_len;             /**< its capacity in values */
  int64_t* history_positions;  /**< B positions after the call */
  size_t* history_counts;      /**< B counts */
  int64_t* history_ids;        /**< B · (max_ngram − 1) ids, as in the call */
} engram_packed_result_t;

/**
 * ABI 1.4 (§HASH.10-§HASH.12). Hashes a packed call. Refuses (the message naming the boundary, request, slot or
 * value) what §HASH.10 item 1, §HASH.9 and §HASH.11 refuse: boundaries that do not start at 0, decrease or pass
 * the buffer, an id or a history outside §HASH.1 / §HASH.9, a parent or an accepted path that is not one, and a
 * capacity that is too small. A library that resets at a position restarting at 0 (the policy `segment-reset`,
 * §HASH.12) does so here; `engram conform --features segment-reset` declares it.
 */
int engram_hash_packed(const engram_layout* layout, const engram_packed_call_t* call, engram_packed_result_t* result,
                       char* err, size_t err_len);

/* ---------------------------------------------------------------- §STO table rows */

/**
 * One decoded element: E4M3fn `code` × 2^(`scale` − 127), rounded to bf16 bits (spec §STO.3).
 * The plug-in host also derives the `fp8_decode` suite's single-format tests from it, both exact:
 * E4M3 value of `code` = decode(code, 127) (scale 2^0), E8M0 value of `scale` = decode(0x38, scale) (0x38 is 1.0);
 * the float32 bits are the bf16 bits shifted left by 16.
 */
int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len);

/** A read-only array and its length in elements (ABI 1.1). The length is what the caller has; the callee
 * refuses a length that does not match the shape it expects, naming the field. */
typedef struct engram_u8_span_t {
  const uint8_t* data; /**< `len` bytes (E4M3fn codes or E8M0 scales) */
  size_t len;          /**< number of elements */
} engram_u8_span_t;
/** bf16 values as their 16-bit patterns (ABI 1.1). */
typedef struct engram_bf16_span_t {
  const uint16_t* data; /**< `len` bf16 bit patterns */
  size_t len;           /**< number of elements */
} engram_bf16_span_t;
/** Floating-point values (ABI 1.1); demo-v1 inputs are float32 values, exact as doubles. */
typedef struct engram_f64_span_t {
  const double* data; /**< `len` values */
  size_t len;         /**< number of elements */
} engram_f64_span_t;

/**
 * ABI 1.1 (§STO.4–§STO.8). A v4.1 table of `rows` rows, each `head_dim` E4M3fn codes and `head_dim`/32 E8M0
 * scales. The output of every lookup is bf16 bit patterns, row-major ([id][head_dim]).
 */
typedef struct engram_table engram_table;

/**
 * ABI 1.1. The synthetic table of spec §STO.5 (rows derived from (seed, row), so real sizes cost no memory);
 * `edge_rows` non-zero adds the raw-byte edge rows. Returns NULL (message in `err`) for rows < 1 or a head_dim that
 * is not a positive multiple of 32.
 */
engram_table* engram_table_synthetic(uint64_t seed, int64_t rows, int64_t head_dim, int32_t edge_rows, char* err,
                                     size_t err_len);
/**
 * ABI 1.1 (§STO.4). Opens the tensors `<tensor_prefix>.weight` (F8_E4M3, [rows, head_dim]) and
 * `<tensor_prefix>.scale` (F8_E8M0, [rows, head_dim/32]) of a safetensors file without reading it whole.
 * The plug-in host writes the test's header and row bytes at their offsets into a sparse file of the real size
 * (about 10^11 bytes, nearly all holes), so offsets beyond 2^32 are exercised. Returns NULL on any problem.
 */
engram_table* engram_table_open_safetensors(const char* path, const char* tensor_prefix, char* err, size_t err_len);
/** ABI 1.1 (§STO.4). Opens a packed-row file (rows of `head_dim` codes then `head_dim`/32 scales). */
engram_table* engram_table_open_packed(const char* path, int64_t head_dim, char* err, size_t err_len);
/** ABI 1.1. Releases a table (NULL is allowed). */
void engram_table_destroy(engram_table* table);

/**
 * ABI 1.1 (§STO.6). Decodes the rows `row_ids[0 .. n)` into `out` (n · head_dim bf16 values; `out_len` is its
 * capacity in elements). Refuses an id outside [0, rows), naming its index and value, and a capacity that is too
 * small; `out` is then unspecified.
 */
int engram_table_lookup(const engram_table* table, const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len,
                        char* err, size_t err_len);
/**
 * ABI 1.1 (§STO.7). Rank `rank` of `world` in row-sharded tensor parallelism: it owns rows
 * [rank·part, min((rank+1)·part, rows)), part = ⌈rows / world⌉, reads those through its local row index and writes
 * +0 (0x0000) to every element of the ids it does not own. `out` as for engram_table_lookup. Refuses ids outside
 * the table (not masked away), rank outside [0, world), world < 1.
 */
int engram_table_row_shard_lookup(const engram_table* table, int32_t rank, int32_t world, const int64_t* row_ids,
                                  size_t n, uint16_t* out, size_t out_len, char* err, size_t err_len);
/**
 * ABI 1.1 (§STO.7). The all_reduce of the ranks' partial lookups: `partials` holds `world` arrays of `count` bf16
 * values, rank 0 first; `out` (count values) receives their bf16 sum. At world 1 the partial is copied unchanged.
 */
int engram_shard_reduce(const uint16_t* partials, int32_t world, size_t count, uint16_t* out, char* err,
                        size_t err_len);
/**
 * ABI 1.1 (§STO.8). Rank `rank` of `world` in head-sharded tensor parallelism: `row_ids` is [positions][columns]
 * (n = positions · columns ids); the rank looks up its columns [rank·hp, min((rank+1)·hp, columns)),
 * hp = ⌈columns / world⌉, of every position and writes [positions][its columns][head_dim] bf16 values to `out`,
 * their number to `*written` (0 for a rank that owns no column). The host gathers the ranks in rank order.
 */
int engram_table_head_shard_lookup(const engram_table* table, int32_t rank, int32_t world, int32_t columns,
                                   const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len, size_t* written,
                                   char* err, size_t err_len);
/**
 * ABI 1.1 (§STO.10, demo-v1). Looks up `n` rows of the synthetic float32 table (seed, rows, width) into `out`
 * (n · width floats; `out_len` its capacity). Refuses ids outside [0, rows).
 */
int engram_float_table_lookup(uint64_t seed, int64_t rows, int64_t width, const int64_t* row_ids, size_t n, float* out,
                              size_t out_len, char* err, size_t err_len);

/* ---------------------------------------------------------------- §TOK compressed token map */

/** ABI 1.1 (§TOK). A compressed token map built from a tokenizer. */
typedef struct engram_token_map engram_token_map;

/**
 * ABI 1.1 (§TOK.1–§TOK.4). Builds the map of a Hugging Face tokenizer.json given as text (`length` bytes, no NUL
 * needed). Returns NULL (message naming the key, id or token in `err`) for every tokenizer the spec refuses:
 * invalid JSON, a model other than BPE, an unsupported decoder, vocab holes or duplicates, mismatched added tokens.
 */
engram_token_map* engram_token_map_build(const char* tokenizer_json, size_t length, char* err, size_t err_len);
/** ABI 1.1. Releases a token map (NULL is allowed). */
void engram_token_map_destroy(engram_token_map* map);
/** ABI 1.1 (§TOK.5). T, the number of raw ids (the tokenizer's length). */
int64_t engram_token_map_tokens(const engram_token_map* map);
/** ABI 1.1 (§TOK.4). V, the number of distinct compressed ids. */
int64_t engram_token_map_compressed_size(const engram_token_map* map);
/** ABI 1.1 (§TOK.4). Writes map[raw id] for every raw id 0 … T − 1 to `out` (T values). */
void engram_token_map_ids(const engram_token_map* map, int64_t* out);
/**
 * ABI 1.1 (§TOK.4). The configuration's view of the map (v4.1): refuses when `compressed_vocab_size` ≥ 0 and is not
 * V, or when `pad_id` is not a raw id of the map; else writes the compressed pad map[pad_id] to `*compressed_pad`.
 */
int engram_token_map_check(const engram_token_map* map, int64_t pad_id, int64_t compressed_vocab_size,
                           int64_t* compressed_pad, char* err, size_t err_len);
/** ABI 1.1 (§TOK.2–§TOK.4). What the map computed for one raw id. Strings are UTF-8 with explicit lengths (they may
 * hold NUL) and stay valid until the map is destroyed. */
typedef struct engram_token_key_t {
  const char* token;        /**< the vocab entry or the added token's content */
  size_t token_len;         /**< bytes of `token` */
  const char* text;         /**< §TOK.2 the decoded text */
  size_t text_len;          /**< bytes of `text` */
  const char* normalized;   /**< §TOK.3 the normalized text; NULL when the text holds U+FFFD (not computed) */
  size_t normalized_len;    /**< bytes of `normalized` */
  const char* key;          /**< §TOK.4 the dictionary key */
  size_t key_len;           /**< bytes of `key` */
  const char* key_kind;     /**< "normalized", "text" or "token" (NUL-terminated) */
  int32_t added;            /**< non-zero for an added token */
  int32_t special;          /**< non-zero for a special added token */
  int32_t replacement;      /**< non-zero when the text holds U+FFFD */
} engram_token_key_t;
/**
 * ABI 1.1, optional even among the token-map entry points: lets the runner show (and compare) the per-id
 * intermediate values of the vectors. Returns non-zero for an id outside [0, T).
 */
int engram_token_map_key(const engram_token_map* map, int64_t id, engram_token_key_t* key);
/**
 * ABI 1.2, optional (spec §HASH.1, TokenLookupTest). The compressed ids of `n` raw ids into `out` (n values):
 * map[raw] each. For `profile` "v4.1" a raw −1 is DEAD (−1), and a position whose `mask` byte is 0 becomes DEAD after
 * its id was looked up (`mask` may be NULL: no mask); "demo-v1" passes negative raw ids through unchanged and takes
 * no mask. Returns non-zero (the message naming the position and the id) for what §HASH.1 refuses: in v4.1 a raw id
 * ≥ T (masked or not) or a negative one other than −1, in demo-v1 a raw id ≥ T, and a mask given to demo-v1.
 */
int engram_token_map_compress(const engram_token_map* map, const int64_t* raw, const uint8_t* mask, size_t n,
                              const char* profile, int64_t* out, char* err, size_t err_len);

/* ---------------------------------------------------------------- §FUS fusion (gates, ShortConv, forward) */

/*
 * Float outputs are doubles: an implementation that computes in float32 (as the published code does) widens
 * its result; the runner judges it with the group's tolerance (spec §FUS.9), and bf16 outputs by faithful
 * rounding of the float64 reference. Arrays are flat and row-major in the index order of spec §FUS.10.
 */

/**
 * ABI 1.1 (§FUS.4, §FUS.6). The gate as a function of the dot product for `profile` "v4.1" (copysign) or "demo-v1"
 * (torch sign()). Refuses any other profile.
 */
int engram_gate(const char* profile, double dot, double* gate, char* err, size_t err_len);
/**
 * ABI 1.1 (§FUS.3). One token of the v4.1 gate after wkv, `hc` streams of `dim` values: `x`, `key`, `q_weight`,
 * `k_weight` are [hc][dim] bf16, `value` is [dim]; `eps` is norm_eps; `masked` non-zero gives gate +0 and
 * out = bf16(h + 0 · v). Writes `gate` (hc values) and `out` ([hc][dim] bf16). Refuses lengths that do not match,
 * naming the field.
 */
int engram_v41_gate(size_t dim, size_t hc, double eps, engram_bf16_span_t x, engram_bf16_span_t key,
                    engram_bf16_span_t value, engram_bf16_span_t q_weight, engram_bf16_span_t k_weight, int32_t masked,
                    double* gate, uint16_t* out, char* err, size_t err_len);
/**
 * ABI 1.1 (§FUS.2). wkv with a bf16 weight [out_features][e.len]: kv[n] = bf16(Σ_k e[k] · W[n][k]) into `kv`
 * (out_features values). Refuses a weight of another length.
 */
int engram_wkv_bf16(engram_bf16_span_t e, engram_bf16_span_t weight, size_t out_features, uint16_t* kv, char* err,
                    size_t err_len);
/**
 * ABI 1.1 (§FUS.2.1, §FUS.2.2). wkv with an fp8 weight: the activation quantized per 32 values, codes
 * [out_features][e.len] E4M3fn, scales [⌈out_features/32⌉][e.len/32] E8M0. Refuses non-finite activations,
 * e.len not a multiple of 32, and lengths that do not match.
 */
int engram_wkv_fp8(engram_bf16_span_t e, engram_u8_span_t weight_codes, engram_u8_span_t weight_scales,
                   size_t out_features, uint16_t* kv, char* err, size_t err_len);

/** ABI 1.1 (§FUS.5–§FUS.7). One demo-v1 Engram layer's parameters (float32 values as doubles), spec §FUS.10. */
typedef struct engram_demo_params_t {
  size_t hc;                          /**< hyper-connection streams */
  size_t hidden;                      /**< hidden size per stream */
  size_t in;                          /**< (max_ngram − 1) · n_embed_per_ngram */
  size_t kernel;                      /**< ShortConv kernel_size */
  size_t dilation;                    /**< ShortConv dilation (= max_ngram_size) */
  engram_f64_span_t key_weight;       /**< [hc][hidden][in] */
  engram_f64_span_t key_bias;         /**< [hc][hidden] */
  engram_f64_span_t norm1_weight;     /**< [hc][hidden], RMSNorm of the key */
  engram_f64_span_t norm2_weight;     /**< [hc][hidden], RMSNorm of the hidden state */
  engram_f64_span_t value_weight;     /**< [hidden][in] */
  engram_f64_span_t value_bias;       /**< [hidden] */
  engram_f64_span_t conv_norm_weight; /**< [hc][hidden], ShortConv's RMSNorm */
  engram_f64_span_t conv_weight;      /**< [hc·hidden][kernel], tap 0 = oldest */
} engram_demo_params_t;

/**
 * ABI 1.1 (§FUS.5, §FUS.6). One token of the demo gate: `e` [in], `hidden` [hc][hidden] → `gate` (hc values) and
 * `value` ([hc][hidden], gate_c · Linear_v(e)). Refuses inconsistent parameters or input lengths, naming the field.
 */
int engram_demo_gate(const engram_demo_params_t* params, engram_f64_span_t e, engram_f64_span_t hidden, double* gate,
                     double* value, char* err, size_t err_len);
/**
 * ABI 1.1 (§FUS.7). ShortConv over `steps` tokens: `value` [steps][hc][hidden] → `output` [steps][hc·hidden]
 * (SiLU of the causal dilated depthwise conv of the per-stream RMSNorms). Refuses lengths that do not match.
 */
int engram_short_conv(const engram_demo_params_t* params, size_t steps, engram_f64_span_t value, double* output,
                      char* err, size_t err_len);

/**
 * ABI 1.3 (§FUS.12). ShortConv carried across calls, as a decode kernel runs it: the normed values of the last
 * W + `rollback_capacity` steps, W = (kernel − 1) · dilation. The exchanged form of the state is its last W steps,
 * [W][hc·hidden] normed values, oldest first, +0 before the sequence's start (TileOPs' `conv_state`).
 */
typedef struct engram_conv_state engram_conv_state;
/**
 * ABI 1.3 (§FUS.12). A carried ShortConv of the layer `params` (copied: the caller may free them after the call).
 * `window` is empty (len 0) for a fresh sequence, or the exchanged form of a sequence that began elsewhere
 * (W · hc · hidden normed values, used as they are). Returns NULL (message in `err`) for inconsistent parameters or a
 * window of another length.
 */
engram_conv_state* engram_conv_state_create(const engram_demo_params_t* params, size_t rollback_capacity,
                                            engram_f64_span_t window, char* err, size_t err_len);
/** ABI 1.3. Releases a state (NULL is allowed). */
void engram_conv_state_destroy(engram_conv_state* state);
/**
 * ABI 1.3 (§FUS.12). Consumes `steps` steps, `value` [steps][hc][hidden], and writes their ShortConv outputs to `output`
 * ([steps][hc·hidden]): §FUS.7's outputs for the sequence consumed so far. Refuses a length that does not match,
 * leaving the state unchanged.
 */
int engram_conv_state_append(engram_conv_state* state, size_t steps, engram_f64_span_t value, double* output, char* err,
                             size_t err_len);
/** ABI 1.3 (§FUS.12). Forgets the last `k` steps; MUST succeed within the rollback depth (§HASH.6 in steps). */
int engram_conv_state_rollback(engram_conv_state* state, size_t k, char* err, size_t err_len);
/** ABI 1.3 (§FUS.12). Writes the exchanged form (W · hc · hidden values; `window_len` is the capacity of `window`). */
int engram_conv_state_window(const engram_conv_state* state, double* window, size_t window_len, char* err,
                             size_t err_len);

/** ABI 1.1 (§FUS.2, §FUS.3). The v4.1 fusion weights of one layer. */
typedef struct engram_v41_fusion_params_t {
  engram_bf16_span_t q_weight;  /**< [hc][dim] */
  engram_bf16_span_t k_weight;  /**< [hc][dim] */
  engram_u8_span_t wkv_codes;   /**< [dim·(hc+1)][columns·head_dim] E4M3fn */
  engram_u8_span_t wkv_scales;  /**< [⌈dim·(hc+1)/32⌉][columns·head_dim/32] E8M0 */
} engram_v41_fusion_params_t;

/**
 * ABI 1.1 (§FUS.10). End to end for the first layer of `layout` (from engram_layout_create, profile v4.1):
 * compressed `ids` (n; DEAD = −1 is a masked position) → hash rows → the synthetic table of §STO.5
 * (`table_seed`, the layer's num_embeddings rows, head_dim of the configuration, no edge rows) → fp8 wkv → gate.
 * `x` is [n][hc][dim] bf16; writes `out` (x.len bf16 values) and `gate` ([n][hc]; `gate_len` is its capacity) and
 * the number of gate values to `*gate_count`. Refuses lengths that do not match.
 */
int engram_forward_v41(const engram_layout* layout, uint64_t table_seed, const engram_v41_fusion_params_t* params,
                       const int64_t* ids, size_t n, engram_bf16_span_t x, uint16_t* out, double* gate, size_t gate_len,
                       size_t* gate_count, char* err, size_t err_len);
/**
 * ABI 1.1 (§FUS.10). End to end for the first layer of `layout` (profile demo-v1): ids → hash rows → the synthetic
 * float table of §STO.10 (`table_seed`, width in / columns) → demo gate, value, ShortConv. `hidden` is
 * [n][hc][hidden]; writes `output` and `hidden_after` ([n][hc][hidden] each) and `gate` ([n][hc]).
 */
int engram_forward_demo(const engram_layout* layout, uint64_t table_seed, const engram_demo_params_t* params,
                        const int64_t* ids, size_t n, engram_f64_span_t hidden, double* output, double* hidden_after,
                        double* gate, char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* ENGRAM_CONFORMANCE_H_ */
