"""The per-test-type reference of docs/porting.md and spec/conformance.md §CONF.6 (scripts/porting_doc.py is
the command): one module per job.

  base          paths, constants, loading the vectors, the problem list
  schema_model  the per-type model read from the JSON Schemas of vectors/schema/ (each field's description and
                its x-role, x-shape, x-encoding, x-condition; each type's x-testTypes entry)
  facts         the facts a port relies on, checked on every test (code: they recompute from the vectors)
  code_tables   per type the dimension formulas and the facts, and the conditions x-condition names
  protocol      what the runner sends for a test (§CONF.1) and the answer that passes it
  checker       the keys, shapes, encodings and facts checked on every test; the schemas' annotations; §CONF.1
  prose         claims of the guide's prose (and of the spec sections stating the same facts) checked against
                the vectors and the spec: a sentence against the truth, or against the generated reference
  render        the Markdown of docs/porting.md and spec/conformance.md §CONF.6
  replay_peer   a JSON-lines adapter that answers every test with the passing answer
"""
