"""Stand-in of Megatron-LM's megatron/core/models/engram/engram_model.py API (pull request 3689) as
conformance/ports/megatron/adapter.py calls it (EngramTransformerLayer, EngramGPTModel, over the adapter's own stubs
of TransformerLayer and GPTModel), with none of its code: the layer adds its EngramModule's output to the hidden
states it is given, the model hashes input_ids with its NgramHashMapping and hands each layer its ids. CI runs the
adapter on it; the real measurement needs the port's checkout."""


class EngramTransformerLayer(TransformerLayer):
    def __init__(self, config, submodules, layer_number=1, hidden_dropout=None, pg_collection=None, vp_stage=None,
                 is_mtp_layer=False, engram_config=None, engram_vocab_size_across_layers=None):
        super().__init__(config=config, submodules=submodules, layer_number=layer_number)
        self.engram = EngramModule(layer_id=layer_number, hidden_size=config.hidden_size, engram_config=engram_config,
                                   vocab_size_for_layer=engram_vocab_size_across_layers[layer_number])

    def forward(self, hidden_states, *args, **kwargs):
        return super().forward(hidden_states + self.engram(hidden_states), *args, **kwargs)


class EngramGPTModel(GPTModel):
    def __init__(self, config, transformer_layer_spec, vocab_size, max_sequence_length, engram_config, **kwargs):
        super().__init__(config=config, transformer_layer_spec=transformer_layer_spec)
        self.engram_config = engram_config
        c = engram_config
        self.ngram_hash_mapping = NgramHashMapping(c.engram_vocab_size, c.max_ngram_size, c.n_embed_per_ngram,
                                                   c.n_head_per_ngram, c.engram_layer_ids, c.tokenizer_name_or_path,
                                                   c.pad_id, c.seed)

    def forward(self, input_ids, position_ids, attention_mask, decoder_input=None, **kwargs):
        by_layer = self.ngram_hash_mapping.hash(input_ids)
        for layer in self.decoder.layers:
            layer.engram.precompute_embeddings(by_layer[layer.engram.layer_id], None)
        return super().forward(input_ids, position_ids, attention_mask, decoder_input=decoder_input)
