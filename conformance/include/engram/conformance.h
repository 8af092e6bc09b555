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

/* ---------------------------------------------------------------- §STO table rows */

/** One decoded element: E4M3fn `code` × 2^(`scale` − 127), rounded to bf16 bits (spec §STO.3). */
int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* ENGRAM_CONFORMANCE_H_ */
