"""Stand-in of the AI-Hypercomputer/maxtext layers conformance/ports/maxtext/adapter.py loads beside engram.py
(src/maxtext/layers/normalizations.py RMSNorm, linears.py DenseGeneral and its helpers, embeddings.py Embed), one
file in all three places, with none of their code: flax nnx modules holding the parameters the adapter loads
(RMSNorm.scale, DenseGeneral.kernel / bias, Embed.embedding); DenseGeneral answers the numpy port's float32
linear, Embed a row gather. The adapter's namespace supplies nnx, jnp and np."""


class RMSNorm(nnx.Module):
    def __init__(self, num_features, epsilon=1e-6, dtype=None, weight_dtype=None, kernel_axes=(), *, rngs=None):
        self.scale = nnx.Param(jnp.ones((num_features,), jnp.float32))


def normalize_axes(axes, ndim):
    return tuple(ax if ax >= 0 else ndim + ax for ax in axes)


def canonicalize_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _compute_dot_general_nnx(*args, **kwargs):
    raise NotImplementedError("the stand-in's DenseGeneral answers from the numpy port")


class DenseGeneral(nnx.Module):
    """kernel [in, out...] and bias [out...]; __call__ over the last axis, refusing another input width."""

    def __init__(self, in_features_shape, out_features_shape, axis=-1, use_bias=False, rngs=None, **_):
        self.in_features_shape = canonicalize_tuple(in_features_shape)
        self.out_features_shape = canonicalize_tuple(out_features_shape)
        self.kernel = nnx.Param(jnp.zeros(self.in_features_shape + self.out_features_shape, jnp.float32))
        self.bias = nnx.Param(jnp.zeros(self.out_features_shape, jnp.float32)) if use_bias else None

    def __call__(self, inputs):
        fusion = __import__("engram_numpy_port.fusion", fromlist=["linear"])
        (inn,) = self.in_features_shape
        if inputs.shape[-1] != inn:
            raise ValueError(f"Input dimension {inputs.shape[-1]} does not match expected input feature size {inn}")
        out = int(np.prod(self.out_features_shape))
        w = np.asarray(self.kernel[...]).reshape(inn, out).T.reshape(-1).tolist()
        b = np.asarray(self.bias[...]).reshape(-1).tolist()
        rows = [fusion.linear(r, w, out, 32, b) for r in np.asarray(inputs).reshape(-1, inn).tolist()]
        return jnp.asarray(np.array(rows, np.float32).reshape(inputs.shape[:-1] + self.out_features_shape))


def _maybe_move_embedding_to_device(embedding_table, config):
    return embedding_table


class Embed(nnx.Module):
    def __init__(self, num_embeddings, num_features, config=None, mesh=None, *, rngs=None, **_):
        self.num_embeddings = num_embeddings
        self.embedding = nnx.Param(jnp.zeros((num_embeddings, num_features), jnp.float32))

    def __call__(self, inputs, model_mode=None):
        return jnp.asarray(np.asarray(self.embedding[...])[np.asarray(inputs)])
