"""Interop tests for the SentencePiece tokenizers (libcommon/tok/tok_spm.c + spm_*.c).

Our ids come from build/tests/tools/tokenize; the peers are the sentencepiece package
(0.2.x: SentencePieceProcessor.encode_as_ids) and megatron-core's build_tokenizer for
--tokenizer-type SentencePieceTokenizer / GPTSentencePieceTokenizer / Llama2Tokenizer
(tokenize, eod, vocab_size). Models: SentencePiece's two Unigram test models (tests/data) and models trained
here on botchan.txt (BPE and Unigram, with and without byte_fallback, user_defined_symbols,
split_digits, identity normalization without whitespace removal, whitespace as suffix,
nmt_nfkc_cf, a custom normalization_rule_tsv; WORD and CHAR models), plus copies edited
with the protobuf classes (UNUSED pieces, which BPE resegments). Texts: botchan.txt lines,
Chinese and Bulgarian fortunes, other scripts, random strings, emoji and adversarial
strings. Also mg-preprocess end to end against megatron_build.
"""
import json
import os
import pathlib
import random
import subprocess
import warnings
import zlib

import pytest

from conftest import (ROOT, VOCAB_DIR, assert_same_dataset, assert_same_ids, megatron_build,
                      run_mg)

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2  # noqa: E402

VOCAB = VOCAB_DIR
TOOL = ROOT / os.environ.get("MG_BUILD", "build") / "tests" / "tools" / "tokenize"
FORTUNES = pathlib.Path("/usr/share/games/fortunes")
BOTCHAN = VOCAB / "sentencepiece" / "botchan.txt"
SP_TYPES = ["SentencePieceTokenizer", "GPTSentencePieceTokenizer", "Llama2Tokenizer"]

ADVERSARIAL = [
    "", " ", "  ", "\n", "\t", "\r\n", " \t \n ", "x  y", "x \t\n y",
    "   leading", "trailing   ", "  both  ", " " * 300 + "z" + " " * 300,
    "\t\ttabs\tinside\t", "new\nlines\n\nhere\n", "a\u0000b", "\u0000", "\u0000 \u0000",
    "e\u0301 a\u0308 n\u0303 combining \u0301\u0301\u0301", "\u1100\u1161\u11a8 jamo",
    "\uff21\uff22\uff23\uff11\uff12\uff13 \uff76\uff80\uff76\uff85 fullwidth \u3000wide\u3000",
    "\u2460\u2461 \ufb01 \u337b \u2126 \u212b \u00bd \u2075", "\u00a0nbsp\u00a0\u00a0x",
    "x\u200by\u200dz\ufeff", "\u2028\u2029\u0085\x0b\x0c", "\u2581 literal \u2581\u2581",
    "\u2581", "\ufffd replacement", "\U0010fffd private", "\U0001F600\U0001F44D\U0001F3FD "
    "\U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f flags \U0001F1EF\U0001F1F5",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! "
    "\u00dc\u00f1\u00ef\u00e7\u00f6\u00f0\u00e9 \u00df \u03a9",
    "12345 1 22 333 4444 3.14159 1,000,000", "<sep>foo<sep>", "fooing! [MASK] x[MASK]y",
    "ing!ing!", "  <sep>  ", "ABab\uff21\u3000x a<u>b \t\t AB", "<s></s><unk><pad>",
    "<0x41><0xE3>", "A" * 5000,
    "\u6f22" * 2000, "ab" * 1000, ". " * 500, "......." * 50,
]


def fortune_entries(path, limit):
    text = path.read_text(encoding="utf-8")
    return [e for e in text.split("\n%\n") if e.strip()][:limit]


def corpus():
    texts = BOTCHAN.read_text(encoding="utf-8").split("\n")[:2500]
    texts += fortune_entries(FORTUNES / "chinese", 300)
    texts += fortune_entries(FORTUNES / "bg" / "bgproverb", 150)
    texts += fortune_entries(FORTUNES / "bg" / "bgauthors", 150)
    texts += ADVERSARIAL
    return texts


TEXTS = corpus()

TRAINED = {
    "bpe": dict(model_type="bpe", vocab_size=2000),
    "bpe_bf": dict(model_type="bpe", vocab_size=3000, byte_fallback=True),
    "bpe_user": dict(model_type="bpe", vocab_size=1500,
                     user_defined_symbols=["<sep>", "foo", "ing!", "[MASK]"]),
    "bpe_digits": dict(model_type="bpe", vocab_size=1000, split_digits=True,
                       character_coverage=0.9995),
    "bpe_llama": dict(model_type="bpe", vocab_size=3000, byte_fallback=True, split_digits=True,
                      normalization_rule_name="identity", remove_extra_whitespaces=False,
                      character_coverage=0.99),
    "uni_bf": dict(model_type="unigram", vocab_size=4000, byte_fallback=True),
    "uni_user": dict(model_type="unigram", vocab_size=1500,
                     user_defined_symbols=["<sep>", "foo", "ing!", "[MASK]"]),
    "uni_5000": dict(model_type="unigram", vocab_size=5000),
    "uni_ident": dict(model_type="unigram", vocab_size=1000, normalization_rule_name="identity",
                      remove_extra_whitespaces=False, add_dummy_prefix=False),
    "uni_suffix": dict(model_type="unigram", vocab_size=1200, treat_whitespace_as_suffix=True),
    "uni_nfkc_cf": dict(model_type="unigram", vocab_size=1200,
                        normalization_rule_name="nmt_nfkc_cf", eos_piece="<end>",
                        pad_id=3, unk_id=0, bos_id=1, eos_id=2),
    "word": dict(model_type="word", vocab_size=3000),
    "char": dict(model_type="char", vocab_size=300, user_defined_symbols=["<sep>", "foo"]),
    # a small precompiled charsmap compiled from RULES (its own Darts array)
    "uni_rules": dict(model_type="unigram", vocab_size=1000, user_defined_symbols=["<u>"],
                      normalization_rule_tsv="RULES"),
}
RULES = "41\t62\nFF21\t41\n3000\t20\n61 62\t7A\n20 20\t20\n9\t20 20\n"
SHARED = ["test_model", "test_ja_model"]
EDITED = ["bpe_unused", "uni_unused"]


def mark_unused(src, dst, every):
    """Copies model src to dst with every `every`-th multi-character NORMAL piece UNUSED."""
    m = sentencepiece_model_pb2.ModelProto()
    m.ParseFromString(pathlib.Path(src).read_bytes())
    k = 0
    for p in m.pieces:
        if p.type == p.NORMAL and len(p.piece) >= 2:
            k += 1
            if k % every == 0:
                p.type = p.UNUSED
    pathlib.Path(dst).write_bytes(m.SerializeToString())


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("spm")
    out = {name: VOCAB / "sentencepiece" / f"{name}.model" for name in SHARED}
    (d / "rules.tsv").write_text(RULES)
    for name, cfg in TRAINED.items():
        if cfg.get("normalization_rule_tsv") == "RULES":
            cfg = dict(cfg, normalization_rule_tsv=str(d / "rules.tsv"))
        spm.SentencePieceTrainer.train(input=str(BOTCHAN), model_prefix=str(d / name),
                                       minloglevel=2, **cfg)
        out[name] = d / f"{name}.model"
    mark_unused(out["bpe"], d / "bpe_unused.model", 3)
    mark_unused(out["uni_bf"], d / "uni_unused.model", 4)
    out["bpe_unused"] = d / "bpe_unused.model"
    out["uni_unused"] = d / "uni_unused.model"
    return out


def run_tokenize(args, texts, check=True):
    """Runs the tokenize tool; returns (vocab_size, eod, id lists) or the process."""
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (make build/tests/tools/tokenize)")
    data = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    p = subprocess.run([str(TOOL)] + [str(a) for a in args], input=data.encode(),
                       capture_output=True)
    if not check:
        return p
    if p.returncode != 0:
        pytest.fail(f"tokenize exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    sizes = dict(kv.split("=") for kv in p.stderr.decode().splitlines()[0].split())
    lines = p.stdout.decode().split("\n")[:-1]
    assert len(lines) == len(texts)
    return int(sizes["vocab_size"]), int(sizes["eod"]), \
        [[int(x) for x in line.split()] for line in lines]


@pytest.mark.parametrize("name", SHARED + list(TRAINED) + EDITED)
def test_ids_match_sentencepiece(models, name):
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    vocab, eod, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                                    "--tokenizer-model", models[name]], TEXTS)
    assert vocab == sp.get_piece_size()
    assert eod == sp.eos_id()
    assert_same_ids(got, [sp.encode_as_ids(t) for t in TEXTS], TEXTS)


def test_edited_models_exercise_unused_pieces(models):
    """The UNUSED edits must change some ids, or the resegmentation path is untested."""
    texts = TEXTS[:300]
    for plain, edited in [("bpe", "bpe_unused"), ("uni_bf", "uni_unused")]:
        a = spm.SentencePieceProcessor(model_file=str(models[plain]))
        b = spm.SentencePieceProcessor(model_file=str(models[edited]))
        assert any(a.encode_as_ids(t) != b.encode_as_ids(t) for t in texts)


def test_eos_piece_from_trainer_spec(models):
    sp = spm.SentencePieceProcessor(model_file=str(models["uni_nfkc_cf"]))
    assert sp.id_to_piece(sp.eos_id()) == "<end>"
    _, eod, _ = run_tokenize(["--tokenizer-type", "Llama2Tokenizer", "--tokenizer-model",
                              models["uni_nfkc_cf"]], ["x"])
    assert eod == sp.eos_id() == 2


def random_texts(seed, n):
    """Random mixes of spaces, ASCII, combining marks, CJK, fullwidth and emoji."""
    rng = random.Random(seed)
    alphabet = list(" \t\n  abcdefghij.,!?0123456789") + ["\u0301", "\u3000", "\uff21",
                                                          "\u65e5", "\u672c", "\U0001F600",
                                                          "\u2581", "\u00a0", "\u0000"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
            for _ in range(n)]


@pytest.mark.parametrize("name", ["test_model", "bpe_bf", "bpe_user", "uni_ident",
                                  "bpe_unused", "uni_suffix"])
def test_random_strings(models, name):
    texts = random_texts(zlib.crc32(name.encode()), 1500)
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    _, _, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                              "--tokenizer-model", models[name]], texts)
    assert_same_ids(got, [sp.encode_as_ids(t) for t in texts], texts)


def megatron_tokenizer(tok_type, model):
    from types import SimpleNamespace

    warnings.simplefilter("ignore")
    from megatron.core.tokenizers.text.utils.build_tokenizer import build_tokenizer

    args = SimpleNamespace(tokenizer_type=tok_type, tokenizer_model=str(model),
                           tokenizer_sentencepiece_legacy=False, tokenizer_special_tokens=None,
                           tokenizer_metadata=None)
    return build_tokenizer(args)


@pytest.mark.parametrize("tok_type", SP_TYPES)
def test_megatron_types(models, tok_type):
    """All three names are megatron-core 0.16's SentencePieceTokenizer: no BOS added."""
    tk = megatron_tokenizer(tok_type, models["bpe_llama"])
    texts = TEXTS[:400] + ADVERSARIAL
    vocab, eod, got = run_tokenize(["--tokenizer-type", tok_type, "--tokenizer-model",
                                    models["bpe_llama"]], texts)
    assert (vocab, eod) == (tk.vocab_size, tk.eod)
    assert_same_ids(got, [tk.tokenize(t) for t in texts], texts)


def test_preprocess_end_to_end(models, tmp_path):
    model = models["uni_bf"]
    tk = megatron_tokenizer("SentencePieceTokenizer", model)
    texts = TEXTS[:1500] + ADVERSARIAL
    inp = tmp_path / "in.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"text": t}, ensure_ascii=(i % 2 == 0)) + "\n")
    run_mg(["mg-preprocess", "--input", inp, "--output-prefix", tmp_path / "ours", "--quiet",
            "--json-keys", "text", "--append-eod", "--workers", "2",
            "--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", model])
    docs = []
    for t in texts:
        ids = list(tk.tokenize(t))
        docs.append(ids + [tk.eod] if ids else ids)
    megatron_build(tmp_path / "peer", docs, "uint16")
    assert_same_dataset(tmp_path / "ours_text_document", tmp_path / "peer")


def test_errors(models, tmp_path):
    p = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model",
                      models["bpe"], "--tokenizer-special-tokens", "<x>"], ["a"], check=False)
    assert p.returncode != 0 and b"tokenizer-special-tokens" in p.stderr
    bad = tmp_path / "bad.model"
    bad.write_bytes(models["bpe"].read_bytes()[:1000])
    p = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", bad],
                     ["a"], check=False)
    assert p.returncode != 0 and b"bad.model" in p.stderr
    with pytest.raises(Exception):
        spm.SentencePieceProcessor(model_file=str(bad))


# ---- long documents: sentencepiece 0.2.3's score rebasing ----
# The 0.2.3 wheel's Unigram Viterbi sums float scores and, when the best path score at a
# start exceeds 1e5 in magnitude, subtracts it from every reached node (rebasing to 0).
# Which of two near-tied paths wins deep inside a long document depends on exactly that
# float arithmetic: these tests compare every id of ~1 MB documents.

def long_document(seed, n_chars):
    """About n_chars characters: botchan lines, numbers (near-tied digit splits), CJK."""
    rng = random.Random(seed)
    lines = [x for x in BOTCHAN.read_text(encoding="utf-8").split("\n") if x]
    cjk = fortune_entries(FORTUNES / "chinese", 300)
    parts, size = [], 0
    while size < n_chars:
        k = rng.random()
        if k < 0.5:
            p = rng.choice(lines)
        elif k < 0.85:
            p = " ".join(str(rng.randrange(10 ** rng.randrange(1, 9)))
                         for _ in range(rng.randrange(1, 8)))
        else:
            p = rng.choice(cjk)
        parts.append(p)
        size += len(p) + 1
    return "\n".join(parts)


def assert_same_long(got, expect):
    first = next((i for i, (a, b) in enumerate(zip(got, expect)) if a != b),
                 min(len(got), len(expect)))
    assert got == expect, (f"{len(got)} ids vs sentencepiece's {len(expect)}; first "
                           f"difference at id {first}: ours {got[first:first + 6]} spm "
                           f"{expect[first:first + 6]}")


@pytest.mark.parametrize("name", ["test_ja_model", "test_model", "uni_5000", "uni_user",
                                  "uni_bf", "uni_nfkc_cf"])
def test_long_document_matches_sentencepiece(models, name):
    text = long_document(zlib.crc32(name.encode()), 1_000_000)
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    _, _, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                              "--tokenizer-model", models[name]], [text])
    assert_same_long(got[0], sp.encode_as_ids(text))


def synthetic_model(path, pieces):
    """A Unigram model with the given (piece, score, type) and no normalization."""
    m = sentencepiece_model_pb2.ModelProto()
    m.ParseFromString((VOCAB / "sentencepiece" / "test_model.model").read_bytes())
    del m.pieces[:]
    for piece, score, kind in [("<unk>", 0, 2), ("<s>", 0, 3), ("</s>", 0, 3)] + pieces:
        p = m.pieces.add()
        p.piece, p.score, p.type = piece, score, kind
    m.trainer_spec.model_type = m.trainer_spec.UNIGRAM
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.precompiled_charsmap = b""
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    pathlib.Path(path).write_bytes(m.SerializeToString())
    return path


def compare_synthetic(path, texts):
    sp = spm.SentencePieceProcessor(model_file=str(path))
    _, _, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                              "--tokenizer-model", path], texts)
    for g, t in zip(got, texts):
        assert_same_long(g, sp.encode_as_ids(t))


@pytest.mark.parametrize("delta", [0.01, 0.004, 0.003, 0.001, 1e-4, 1e-6])
def test_float_sums_and_rebasing(tmp_path, delta):
    """"b"+"c" scores -2, "bc" -2-delta: float sums at 1e5 tie them ("bc", the earlier
    start, stays); after a rebase (an unknown "x" or a start past 1e5) they do not."""
    path = synthetic_model(tmp_path / "f.model", [("a", -1.0, 1), ("b", -1.0, 1),
                                                  ("c", -1.0, 1), ("bc", -2.0 - delta, 1),
                                                  ("\u2581", -1.0, 1), ("ab", -2.0, 1)])
    n = 100_000
    texts = ["a" * n + "bc", "a" * n + "xbc", "x" + "a" * n + "bc", "a" * 99_990 + "bc",
             "a" * 100_003 + "bc", ("a" * 99 + " ") * 1500 + "bc", "a" * n + "x" + "a" * n + "bc",
             ("abc" * 7 + "x") * 20_000, "a" * (2 * n + 17) + "bc"]
    compare_synthetic(path, texts)


def test_user_defined_scores(tmp_path):
    """A USER_DEFINED piece of n bytes scores (n - 1) * 0.1 in the Viterbi."""
    cases = [([("b", -0.01, 1), ("c", -0.01, 1), ("bc", 0, 4)], ["bc", "abca"]),
             ([("b", -5, 1), ("c", -5, 1), ("d", 0.15, 1), ("bc", 0, 4), ("bcd", 0, 4)],
              ["bcd", "bcdbc"]),
             ([("b", -5, 1), ("c", -5, 1), ("d", 0.05, 1), ("bc", 0, 4), ("bcd", 0, 4)],
              ["bcd", "bcdbc"]),
             ([("\u00e9", -0.01, 1), ("\u00e9\u00e9", 0.2, 1), ("\u00e9\u00e9\u00e9", 0, 4)],
              ["\u00e9\u00e9\u00e9\u00e9", "\u00e9\u00e9\u00e9\u00e9\u00e9"])]
    for i, (pieces, texts) in enumerate(cases):
        path = synthetic_model(tmp_path / f"u{i}.model", [("a", -1.0, 1)] + pieces)
        compare_synthetic(path, texts)


def test_general_viterbi_path(tmp_path):
    """Models off the packed fast path: a user-defined piece over 255 bytes, scores so
    large that path sums overflow to -inf (unreached and -inf nodes differ there)."""
    q = "q" * 300
    path = synthetic_model(tmp_path / "long.model", [("a", -1.0, 1), ("b", -1.0, 1),
                                                     ("c", -1.0, 1), ("bc", -2.001, 1),
                                                     ("q", -1.0, 1), (q, 0, 4)])
    compare_synthetic(path, ["a" * 100_000 + "bc" + q + "a" * 1000 + "bc" + q + "qq",
                             ("abc" * 5 + "x") * 30_000, q[:299] + "x" + q * 3])
    path = synthetic_model(tmp_path / "huge.model", [("a", -3e38, 1), ("b", -1.0, 1),
                                                     ("c", -2e38, 1), ("bc", -2.5e38, 1),
                                                     ("ab", -1e38, 1), ("\u2581", -1.0, 1)])
    compare_synthetic(path, ["abcabcbcab", "aaaa bc xyz", "cab" * 50 + "x", "b" * 10])


def test_non_finite_scores_rejected(tmp_path):
    """sentencepiece 0.2.3 refuses a Unigram model with a NaN or infinite score (any piece
    type); BPE models load."""
    for i, (score, kind) in enumerate([(float("-inf"), 1), (float("nan"), 4),
                                       (float("inf"), 3)]):
        path = synthetic_model(tmp_path / f"bad{i}.model", [("a", -1.0, 1), ("b", score, kind)])
        with pytest.raises(RuntimeError, match="NaN or Inf"):
            spm.SentencePieceProcessor(model_file=str(path))
        p = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model",
                          path], ["ab"], check=False)
        assert p.returncode != 0 and b"NaN or Inf" in p.stderr


# ---- single-character CONTROL pieces (issue 3) ----
# Models trained on botchan.txt, then "x" and "q" marked CONTROL. sentencepiece 0.2.3
# encodes such a character as unknown text (a run of them is one unk; with byte_fallback
# one <0xXX> per byte) and BPE still merges through it when the merged piece is NORMAL
# ("xt", "▁next"). Our encoder used to stop with "the model produced control piece N".

CONTROL_CHARS = ("x", "q")
CONTROL_TRAINED = {
    "ctl_bpe": dict(model_type="bpe", vocab_size=1000),
    "ctl_bpe_bf": dict(model_type="bpe", vocab_size=1000, byte_fallback=True),
    "ctl_uni": dict(model_type="unigram", vocab_size=1000),
    "ctl_uni_bf": dict(model_type="unigram", vocab_size=1000, byte_fallback=True),
    "ctl_char": dict(model_type="char", vocab_size=100),
}


def mark_control(src, dst, unused_with_control=False):
    """Copies model src to dst with the pieces "x" and "q" CONTROL (and, if asked, every
    multi-character NORMAL piece holding one of them UNUSED: BPE resegments those)."""
    m = sentencepiece_model_pb2.ModelProto()
    m.ParseFromString(pathlib.Path(src).read_bytes())
    marked = 0
    for p in m.pieces:
        if p.piece in CONTROL_CHARS:
            assert p.type == p.NORMAL
            p.type = p.CONTROL
            marked += 1
        elif unused_with_control and p.type == p.NORMAL and len(p.piece) >= 2 and \
                any(c in p.piece for c in CONTROL_CHARS):
            p.type = p.UNUSED
    assert marked == len(CONTROL_CHARS)
    pathlib.Path(dst).write_bytes(m.SerializeToString())
    return dst


@pytest.fixture(scope="module")
def control_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("spm_control")
    out = {}
    for name, cfg in CONTROL_TRAINED.items():
        spm.SentencePieceTrainer.train(input=str(BOTCHAN), model_prefix=str(d / name),
                                       minloglevel=2, **cfg)
        out[name] = mark_control(d / f"{name}.model", d / f"{name}_c.model")
    out["ctl_bpe_unused"] = mark_control(d / "ctl_bpe.model", d / "ctl_bpe_unused_c.model",
                                         unused_with_control=True)
    return out


def control_texts(seed):
    """Botchan lines (all those holding x or q, then others), the issue's examples and
    random strings over a small alphabet rich in x and q (short, and long without spaces
    so that both BPE merge paths run)."""
    lines = [x for x in BOTCHAN.read_text(encoding="utf-8").split("\n") if x]
    texts = [x for x in lines if "x" in x or "q" in x] + lines[:400]
    texts += ["abxab", "xx ab", "next example box", "x", "q", "xq", "qx", "xxxx", " x ",
              "quick quiz", "exxon", "six", "xt", "a\u00e9x\u65e5q", "x\U0001F600q"]
    rng = random.Random(seed)
    alphabet = list("xxxqqqabetnuio  ") + ["xt", "ex", "qu", "ne", "\u2581", "\u00e9",
                                           "\u65e5", "\t"]
    for i in range(1500):
        k = rng.randrange(0, 40) if i % 10 else rng.randrange(60, 400)
        s = "".join(rng.choice(alphabet) for _ in range(k))
        texts.append(s.replace(" ", "") if i % 10 == 0 else s)
    return texts


def lone_control_symbols(sp, texts):
    """How many texts sentencepiece encodes with "x" or "q" left as a piece of its own
    (the texts on which the old code failed): such a character comes out as unknown."""
    byte_ids = {sp.piece_to_id("<0x%02X>" % ord(c)) for c in CONTROL_CHARS} \
        if sp.piece_to_id("<0x78>") != sp.unk_id() else set()
    n = 0
    for t in texts:
        pieces = sp.encode(t, return_type="proto").pieces
        if any((p.id == sp.unk_id() and p.piece and set(p.piece) <= set(CONTROL_CHARS))
               or p.id in byte_ids for p in pieces):
            n += 1
    return n


@pytest.mark.parametrize("name", list(CONTROL_TRAINED) + ["ctl_bpe_unused"])
def test_control_characters_match_sentencepiece(control_models, name):
    sp = spm.SentencePieceProcessor(model_file=str(control_models[name]))
    assert all(sp.is_control(sp.piece_to_id(c)) for c in CONTROL_CHARS)
    texts = control_texts(zlib.crc32(name.encode()))
    # the texts really hold lone control characters (where the old code stopped)
    assert lone_control_symbols(sp, texts) > 500
    _, _, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                              "--tokenizer-model", control_models[name]], texts)
    assert_same_ids(got, [sp.encode_as_ids(t) for t in texts], texts)


def test_control_characters_issue_examples(control_models):
    """The issue's cases, piece by piece; and BPE merges through a CONTROL character."""
    cases = [("ctl_bpe", "abxab", ["\u2581ab", None, "ab"]),
             ("ctl_bpe_bf", "abxab", ["\u2581ab", "<0x78>", "ab"]),
             ("ctl_bpe", "xx ab", ["\u2581", None, "\u2581ab"]),
             ("ctl_bpe_bf", "xx ab", ["\u2581", "<0x78>", "<0x78>", "\u2581ab"])]
    for name, text, pieces in cases:
        sp = spm.SentencePieceProcessor(model_file=str(control_models[name]))
        expect = [sp.unk_id() if p is None else sp.piece_to_id(p) for p in pieces]
        assert sp.encode_as_ids(text) == expect
        _, _, got = run_tokenize(["--tokenizer-type", "SentencePieceTokenizer",
                                  "--tokenizer-model", control_models[name]], [text])
        assert got[0] == expect
    merged = 0
    for name in ["ctl_bpe", "ctl_bpe_bf"]:
        sp = spm.SentencePieceProcessor(model_file=str(control_models[name]))
        texts = control_texts(1)[:600]
        for t in texts:
            merged += sum(1 for p in sp.encode(t, return_type="proto").pieces
                          if len(p.piece) > 1 and "x" in p.piece and not sp.is_unknown(p.id))
    assert merged > 50


def test_control_characters_preprocess(control_models, tmp_path):
    """mg-preprocess end to end on a BPE model with CONTROL "x"/"q" (the issue's failure)."""
    model = control_models["ctl_bpe_bf"]
    sp = spm.SentencePieceProcessor(model_file=str(model))
    texts = control_texts(7)[:800]
    inp = tmp_path / "in.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    run_mg(["mg-preprocess", "--input", inp, "--output-prefix", tmp_path / "ours", "--quiet",
            "--json-keys", "text", "--append-eod", "--workers", "2",
            "--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", model])
    docs = []
    for t in texts:
        ids = sp.encode_as_ids(t)
        docs.append(ids + [sp.eos_id()] if ids else ids)
    megatron_build(tmp_path / "peer", docs, "uint16")
    assert_same_dataset(tmp_path / "ours_text_document", tmp_path / "peer")
